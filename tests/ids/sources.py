"""Deterministic random sources for minting tests."""

from __future__ import annotations


class ReplaySource:
    """Hands out ``data`` front to back, counting what was read; asking past the end is a test failure."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.read = 0

    def __call__(self, n: int) -> bytes:
        if self.read + n > len(self.data):
            raise AssertionError(f"source exhausted: {n} bytes asked at {self.read} of {len(self.data)}")
        chunk = self.data[self.read:self.read + n]
        self.read += n
        return chunk


class CountingSource:
    """The control vector's source: bytes 0, 1, 2, ... (mod 256), each call continuing the count."""

    def __init__(self) -> None:
        self.read = 0

    def __call__(self, n: int) -> bytes:
        chunk = bytes((self.read + i) % 256 for i in range(n))
        self.read += n
        return chunk
