"""Helpers shared by the preview tests: pixel sampling in the service's percent coordinates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PIL import Image
from pypdf import PdfReader, PdfWriter
from pypdf.generic import NameObject, NumberObject, RectangleObject

from airflow_provider_docsign.preview import FILL_ALPHA

WHITE = (255, 255, 255)


def pixel(image: Image.Image, x_percent: float, y_percent: float) -> tuple[int, int, int]:
    """The pixel at a point given as percentages of the displayed page, from its top-left corner."""
    width, height = image.size
    col = min(width - 1, int(x_percent * width / 100))
    row = min(height - 1, int(y_percent * height / 100))
    value: Any = image.getpixel((col, row))
    return (int(value[0]), int(value[1]), int(value[2]))


def close(actual: tuple[int, int, int], expected: tuple[int, int, int], tolerance: int = 4) -> bool:
    return all(abs(a - e) <= tolerance for a, e in zip(actual, expected, strict=True))


def tint(color: tuple[int, int, int]) -> tuple[int, int, int]:
    """The colour of the translucent fill over a white page."""
    return tuple(round(255 * (1 - FILL_ALPHA) + c * FILL_ALPHA) for c in color)  # type: ignore[return-value]


def field(
    x: float, y: float, w: float, h: float, *, page: int = 1, identifier: Any = 0, kind: str = "SIGNATURE"
):
    return {
        "identifier": identifier,
        "type": kind,
        "page": page,
        "positionX": x,
        "positionY": y,
        "width": w,
        "height": h,
    }


def reshape_pdf(
    source: Path,
    target: Path,
    *,
    rotate: int = 0,
    mediabox: tuple[float, float, float, float] | None = None,
    cropbox: tuple[float, float, float, float] | None = None,
) -> Path:
    """Copy a PDF with /Rotate and/or boxes changed on every page (to test displayed geometry)."""
    writer = PdfWriter(clone_from=PdfReader(source))
    for page in writer.pages:
        if rotate:
            page[NameObject("/Rotate")] = NumberObject(rotate)
        if mediabox:
            page.mediabox = RectangleObject(mediabox)
        if cropbox:
            page.cropbox = RectangleObject(cropbox)
    with open(target, "wb") as fh:
        writer.write(fh)
    return target


def count_color(image: Image.Image, color: tuple[int, int, int], box: tuple[int, int, int, int]) -> int:
    """How many pixels inside ``box`` (left, top, right, bottom) have exactly ``color``."""
    data = image.crop(box).convert("RGB").tobytes()
    target = bytes(color)
    return sum(1 for i in range(0, len(data), 3) if data[i : i + 3] == target)
