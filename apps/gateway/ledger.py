"""Off-the-hot-path ledger writes: the serving loop hands a CallRecord to a queue; one thread prices and inserts
them in batches. A call's row never waits on the database, and the database never sees one insert per chunk.
"""

from __future__ import annotations

import logging
import queue
import threading

from django.db import connection

from apps.gateway import services

logger = logging.getLogger(__name__)

_BATCH = 500
_IDLE_SECONDS = 2.0


class LedgerWriter:
    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[services.CallRecord | None] = queue.SimpleQueue()
        self._pending = 0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, record: services.CallRecord) -> None:
        """Queue a row (O(1), never blocks the event loop)."""
        with self._cond:
            self._pending += 1
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="gateway-ledger", daemon=True)
                self._thread.start()
        self._queue.put(record)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every submitted row is written (or failed and logged). True when drained in time."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout=timeout)

    def release(self) -> None:
        """Close the writer's database connection once the rows queued so far are written (server shutdown)."""
        self._queue.put(None)

    def _run(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                # Idle: give the connection back; a busy writer keeps it, since reconnecting costs more than a row.
                connection.close()
                continue
            if first is None:
                connection.close()
                continue
            batch = [first]
            while len(batch) < _BATCH:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)  # handle the release after this batch
                    break
                batch.append(item)
            self._write(batch)
            with self._cond:
                self._pending -= len(batch)
                self._cond.notify_all()

    def _write(self, batch: list[services.CallRecord]) -> None:
        for attempt in (1, 2):
            try:
                services.calls_record(calls=batch)
                return
            except Exception:
                # A dropped connection is the usual cause: reconnect once; after that, say loudly what was lost.
                connection.close()
                if attempt == 2:
                    logger.exception(
                        "gateway ledger: %d call rows NOT recorded: %s",
                        len(batch),
                        [(r.subject, r.requested_model, r.status) for r in batch],
                    )


writer = LedgerWriter()
