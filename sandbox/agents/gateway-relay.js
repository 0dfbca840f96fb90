// Inside a sandbox with no network: listen on 127.0.0.1:<port> and carry every connection to a Unix socket that
// the Harbor worker serves, which carries it on to the model gateway. The agent's base URL stays as the worker
// sees it (its host is mapped to 127.0.0.1), so the gateway is the only thing the agent can reach.
//   node gateway-relay.js <port> <socket>
"use strict";
const net = require("net");

const [port, socketPath] = process.argv.slice(2);
if (!port || !socketPath) {
  console.error("usage: gateway-relay.js <port> <socket>");
  process.exit(2);
}

net
  .createServer((client) => {
    const upstream = net.connect(socketPath);
    client.pipe(upstream);
    upstream.pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", close);
    upstream.on("error", close);
    client.on("close", close);
    upstream.on("close", close);
  })
  .on("error", (err) => {
    console.error(`gateway-relay: ${err.message}`);
    process.exit(1);
  })
  .listen(Number(port), "127.0.0.1");
