"""``Image`` and ``Audio``: return one from a tool or put one in a prompt message, get a content block."""

from __future__ import annotations

import base64
from pathlib import Path

from minimcp.types import AudioContent, ImageContent

_IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
                ".webp": "image/webp"}
_AUDIO_TYPES = {".wav": "audio/wav", ".mp3": "audio/mpeg", ".ogg": "audio/ogg", ".flac": "audio/flac",
                ".m4a": "audio/mp4"}


class _Media:
    _types: dict[str, str] = {}
    _kind = ""

    def __init__(self, path: str | Path | None = None, data: bytes | None = None, format: str | None = None) -> None:
        if (path is None) == (data is None):
            raise ValueError("Either path or data must be provided")
        self.path = Path(path) if path is not None else None
        self.data = data
        self._format = format

    @property
    def mime_type(self) -> str:
        if self._format:
            return f"{self._kind}/{self._format.lower()}"
        if self.path is not None:
            return self._types.get(self.path.suffix.lower(), "application/octet-stream")
        return f"{self._kind}/{'png' if self._kind == 'image' else 'wav'}"

    def _base64(self) -> str:
        raw = self.path.read_bytes() if self.path is not None else self.data
        return base64.b64encode(raw or b"").decode()


class Image(_Media):
    """An image from a file or bytes; the MIME type comes from ``format`` or the file suffix."""

    _types = _IMAGE_TYPES
    _kind = "image"

    def to_image_content(self) -> ImageContent:
        return ImageContent(type="image", data=self._base64(), mime_type=self.mime_type)


class Audio(_Media):
    """A sound from a file or bytes; the MIME type comes from ``format`` or the file suffix."""

    _types = _AUDIO_TYPES
    _kind = "audio"

    def to_audio_content(self) -> AudioContent:
        return AudioContent(type="audio", data=self._base64(), mime_type=self.mime_type)
