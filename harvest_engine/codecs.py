"""Payload codecs: how payload text is compressed or encrypted at rest, and the ones that ship.

A codec turns bytes into bytes and back. The store applies it where payload
text crosses into the file (run input/output/error/memo, history events,
tasks, signals, commands, logs, progress values): the engine itself only ever
sees plain JSON, so replay compares what it always compared. Search
attributes stay plain: the store queries them by value.
"""

from __future__ import annotations

import base64
import gzip
import importlib
import os
from typing import Protocol, runtime_checkable

MARK = "~hc1:"
"""How an encoded value begins in the file: JSON text never starts with ``~``."""


class CodecFailed(ValueError):
    """A codec could not decode a value (a wrong key, a damaged value, another codec)."""


@runtime_checkable
class PayloadCodec(Protocol):
    """Turns payload bytes into stored bytes and back; `decode(encode(b)) == b`.

    `decode` raises on a value it cannot read (a wrong key): the store says it
    as `CodecRequired`.
    """

    def encode(self, data: bytes) -> bytes:
        """The bytes to store for `data`."""
        ...

    def decode(self, data: bytes) -> bytes:
        """The payload bytes back from what `encode` stored."""
        ...


def encode_text(codec: PayloadCodec, text: str) -> str:
    """A payload's stored text: the mark, then the codec's bytes in base64."""
    return MARK + base64.b64encode(codec.encode(text.encode())).decode("ascii")


def decode_text(codec: PayloadCodec, stored: str) -> str:
    """The payload text back from `encode_text`'s (plain text passes through unchanged).

    Raises:
        CodecFailed: the codec could not read it.
    """
    if not stored.startswith(MARK):
        return stored
    try:
        return codec.decode(base64.b64decode(stored[len(MARK) :])).decode()
    except Exception as exc:  # any codec's failure is one answer: cannot read it
        raise CodecFailed(
            f"{type(codec).__name__} could not decode a payload: {exc}"
        ) from exc


def load_codec(spec: str) -> PayloadCodec:
    """The codec named ``module:attr`` (the CLI's and the GUI's ``--codec``).

    The attribute may be a codec or a callable with no arguments returning one.

    Raises:
        ValueError: the spec does not name a codec.
    """
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--codec wants module:attr, not {spec!r}")
    try:
        found: object = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"--codec {spec}: {exc}") from exc
    if not isinstance(found, PayloadCodec) and callable(found):
        found = found()
    if not isinstance(found, PayloadCodec):
        raise ValueError(f"--codec {spec} is not a codec (it needs encode and decode)")
    return found


class GzipCodec:
    """Compresses payloads with the standard library's gzip."""

    def __init__(self, level: int = 6) -> None:
        self.level = level

    def encode(self, data: bytes) -> bytes:
        """Compressed bytes."""
        return gzip.compress(data, compresslevel=self.level, mtime=0)

    def decode(self, data: bytes) -> bytes:
        """The bytes back."""
        return gzip.decompress(data)


class ZstdCodec:
    """Compresses payloads with zstandard (the ``harvest[zstd]`` extra)."""

    def __init__(self, level: int = 3) -> None:
        import zstandard

        self._compressor = zstandard.ZstdCompressor(level=level)
        self._decompressor = zstandard.ZstdDecompressor()

    def encode(self, data: bytes) -> bytes:
        """Compressed bytes (a frame that records its size)."""
        return self._compressor.compress(data)

    def decode(self, data: bytes) -> bytes:
        """The bytes back."""
        return self._decompressor.decompress(data)


class AesGcmCodec:
    """Encrypts payloads with AES-GCM (``cryptography``, the ``harvest[crypto]`` extra).

    Each value gets a fresh random 12-byte nonce, stored before the ciphertext
    and its tag; a wrong key or a changed byte fails the tag check on decode.
    """

    NONCE_BYTES = 12

    def __init__(self, key: bytes) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        if len(key) not in (16, 24, 32):
            raise ValueError("AesGcmCodec wants a 16, 24 or 32 byte key")
        self._aead = AESGCM(key)

    def encode(self, data: bytes) -> bytes:
        """Nonce, then ciphertext and tag."""
        nonce = os.urandom(self.NONCE_BYTES)
        return nonce + self._aead.encrypt(nonce, data, None)

    def decode(self, data: bytes) -> bytes:
        """The plaintext back; raises on a wrong key or a changed byte."""
        nonce, sealed = data[: self.NONCE_BYTES], data[self.NONCE_BYTES :]
        return self._aead.decrypt(nonce, sealed, None)
