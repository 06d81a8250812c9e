"""A TCP relay on loopback that can cut every connection through it and refuse new ones
for a while: the database going away (a restart, a network cut mid-transaction) and coming
back, as the service sees it, without touching the database server the run shares."""

from __future__ import annotations

import contextlib
import socket
import threading


class Cuttable:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._down = False
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        """Every connection through the relay closed at once (mid-query, mid-transaction),
        and new ones closed as they come, until `restore`."""
        with self._lock:
            self._down = True
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def restore(self) -> None:
        with self._lock:
            self._down = False

    def close(self) -> None:
        self.cut()
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                down = self._down
            if down:
                client.close()
                continue
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            if self._down:  # cut while connecting
                client.close()
                server.close()
                continue
            with self._lock:
                self.accepted += 1
                self._open |= {client, server}
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            with self._lock:
                self._open.discard(source)
                self._open.discard(sink)
