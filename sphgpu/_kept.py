"""A thread-safe keeper of the few most recently used set-ups of a process (a Dask worker's
grids and transform plans): made once per key, the least recently used dropped past a size."""

from __future__ import annotations

import threading
from collections import OrderedDict

__all__ = ["Kept"]


class Kept:
    """``get(key, make)`` returns the object kept for ``key``, calling ``make()`` on a miss;
    at most ``keep`` objects are kept. ``make`` runs outside the lock (a plan may take seconds
    to make); when two threads make the same key at once, the first one stored wins."""

    def __init__(self, keep: int):
        self.keep = keep
        self._lock = threading.Lock()
        self._items: "OrderedDict[tuple, object]" = OrderedDict()

    def get(self, key, make):
        """The object kept for ``key`` (hashable), made by ``make()`` the first time."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = make()
        with self._lock:
            value = self._items.setdefault(key, value)
            self._items.move_to_end(key)
            while len(self._items) > self.keep:
                self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        """Forget every kept object."""
        with self._lock:
            self._items.clear()
