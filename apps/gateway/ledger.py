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


class LedgerWriter:
    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[services.CallRecord] = queue.SimpleQueue()
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

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < _BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            self._write(batch)
            if self._queue.empty():
                # Idle: give the connection back (CONN_MAX_AGE semantics); a busy writer keeps it across batches.
                connection.close()
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
