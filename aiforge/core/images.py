"""Image facts and resizing, with Pillow (the ``documents`` extra): an image's size, and the image a vendor reads.

Pillow is imported on first use, never by ``import aiforge``. A corrupt or truncated image is a ``FileInputError``
naming the file. ``resized_image`` makes the image no larger than the sizes given (a vendor's published ones, from
``core.file_rules``) and hands back the original bytes whenever they already fit and are a kind the vendors take
(PNG, JPEG, GIF, WebP): nothing is re-encoded, so nothing grows.
"""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Callable
from typing import Any

from aiforge.core.errors import ConfigError, FileInputError
from aiforge.core.pdfs import DOCUMENTS_EXTRA, reason

SENT_AS_IS = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Image kinds both vendors read (OpenAI and Anthropic alike); BMP and TIFF are sent as PNG."""

JPEG_QUALITY = 90
"""Quality of a resized JPEG or WebP: no visible loss at the sizes vendors read, well under the original's bytes."""


def image_size(data: bytes, name: str) -> tuple[int, int]:
    """``(width, height)`` in pixels as the image is shown (its EXIF orientation applied), after checking that the
    whole image decodes: a corrupt or truncated one is a ``FileInputError`` naming ``name``."""
    image, turned = _opened(data, name)
    width, height = image.size
    _load(image, name, _eighth(image))
    return (height, width) if turned else (width, height)


def fitted_size(
    width: int, height: int, max_side: int | None, max_pixels: int | None = None, short_side: int | None = None
) -> tuple[int, int]:
    """``(width, height)`` scaled down (never up), keeping its shape, until its long side is at most ``max_side``,
    its area at most ``max_pixels`` and its short side at most ``short_side`` (each only when given)."""
    scale = 1.0
    if max_side is not None:
        scale = min(scale, max_side / max(width, height))
    if max_pixels is not None:
        scale = min(scale, math.sqrt(max_pixels / (width * height)))
    if short_side is not None:
        scale = min(scale, short_side / min(width, height))
    if scale >= 1.0:
        return width, height
    return max(1, math.floor(width * scale)), max(1, math.floor(height * scale))


def resized_image(
    data: bytes,
    mime: str,
    name: str,
    max_side: int | None,
    max_pixels: int | None = None,
    short_side: int | None = None,
    *,
    fit: Callable[[int, int], tuple[int, int]] | None = None,
) -> tuple[bytes, str]:
    """``(bytes, mime)`` of the image ``data`` fitted to the sizes given (``fitted_size``), or to the size ``fit``
    gives for its ``(width, height)`` as shown (never larger than it is).

    When it already fits and is PNG, JPEG, GIF or WebP, the original bytes come back unchanged. A BMP or TIFF comes
    back as PNG; a resized image keeps its kind (JPEG and WebP at ``JPEG_QUALITY``; a GIF becomes a PNG, which keeps
    its colours), with its EXIF orientation applied so it is shown the same way up. An animated image (GIF, WebP,
    APNG) is sent as its first frame, resized or not; a TIFF of several pages is a ``FileInputError`` (``_opened``).
    """
    image, turned = _opened(data, name)
    width, height = image.size[::-1] if turned else image.size
    if fit is None:
        target = fitted_size(width, height, max_side, max_pixels, short_side)
    else:
        fitted = fit(width, height)
        target = (min(width, max(1, fitted[0])), min(height, max(1, fitted[1])))
    # An animated image (GIF, WebP, APNG) is sent as its first frame: OpenAI refuses animated GIFs.
    animated = bool(getattr(image, "is_animated", False))
    if target == (width, height) and mime in SENT_AS_IS and not animated:
        _load(image, name, _eighth(image))
        return data, mime
    from PIL import ImageOps

    # The JPEG decoder scales by 1/2, 1/4 or 1/8 as it reads (never below the target): far faster on a photo.
    _load(image, name, target[::-1] if turned else target)
    image = _eight_bit(ImageOps.exif_transpose(image))
    if image.size != target:
        image = _resample(image, target)
    return _encoded(image, mime, name)


def jpeg_copy(data: bytes, name: str, quality: int = 85) -> bytes:
    """``data`` (any image) as a JPEG of the same size, transparency flattened on white: the smallest form of a
    picture that is over a vendor's bytes per image as PNG."""
    from PIL import Image

    image, _ = _opened(data, name)
    _load(image, name, image.size)
    if _has_alpha(image):
        background = Image.new("RGB", image.size, (255, 255, 255))
        background.paste(image.convert("RGBA"), mask=image.convert("RGBA").getchannel("A"))
        image = background
    buffer = io.BytesIO()
    image.convert("L" if image.mode in ("1", "L") else "RGB").save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def shown_as_stored(data: bytes, name: str) -> bool:
    """Whether ``data`` is shown as its pixels are stored: one frame, no EXIF turn or flip. A vendor may then be sent
    the original bytes, and reads what aiforge would have sent."""
    image, _ = _opened(data, name)
    return not getattr(image, "is_animated", False) and image.getexif().get(0x0112, 1) == 1


def _eight_bit(image: Any) -> Any:
    """``image`` with 8 bits a channel: 16-bit greyscale divided by 256, a 32-bit integer or float image stretched
    from its darkest to its lightest pixel (Pillow's own conversion clips them: washed out white, or black)."""
    if image.mode.startswith("I;16"):
        return image.convert("I").point(lambda value: value / 256).convert("L")
    if image.mode in ("I", "F"):
        low, high = image.getextrema()
        scale = 255 / (high - low) if high > low else 0
        return image.point(lambda value: (value - low) * scale).convert("L")
    return image


def _resample(image: Any, size: tuple[int, int]) -> Any:
    from PIL import Image

    if image.mode == "1" or (image.mode == "P" and _grey_palette(image) and not _has_alpha(image)):
        image = image.convert("L")  # a scan in black and white or grey stays one channel: a third of the bytes
    elif image.mode not in ("RGB", "RGBA", "L", "LA"):
        image = image.convert("RGBA" if _has_alpha(image) else "RGB")
    return image.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)


def _encoded(image: Any, mime: str, name: str) -> tuple[bytes, str]:
    buffer = io.BytesIO()
    if mime == "image/jpeg":
        image.convert("L" if image.mode in ("L", "LA") else "RGB").save(buffer, format="JPEG", quality=JPEG_QUALITY)
        return buffer.getvalue(), "image/jpeg"
    if mime == "image/webp":
        image.save(buffer, format="WEBP", quality=JPEG_QUALITY, save_all=False)
        return buffer.getvalue(), "image/webp"
    if image.mode not in ("1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"):
        image = image.convert("RGBA" if _has_alpha(image) else "RGB")
    try:
        image.save(buffer, format="PNG")
    except OSError as exc:
        raise FileInputError(f"{name}: cannot be converted to PNG ({exc}).") from exc
    return buffer.getvalue(), "image/png"


def _opened(data: bytes, name: str) -> tuple[Any, bool]:
    """``data`` opened by Pillow (its header read, its pixels not yet), and whether its EXIF orientation turns it a
    quarter (its width and height shown swapped); ``FileInputError`` when it is no readable image."""
    Image = _pil().Image
    try:
        with warnings.catch_warnings():
            # A huge image is refused as an error of its own; the warning would fail a test, not inform a user.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            pages = getattr(image, "n_frames", 1) if image.format == "TIFF" else 1
            # A PNG's EXIF may follow its pixels: reading it can decode the image, and meet a truncated file.
            turned = image.getexif().get(0x0112, 1) in (5, 6, 7, 8)
    except Image.DecompressionBombError as exc:
        raise FileInputError(f"{name}: too many pixels to read safely ({_first_line(exc)}); scale it down.") from exc
    except Exception as exc:  # Pillow raises OSError, SyntaxError, ValueError ... on a damaged file
        raise FileInputError(f"{name}: not a readable image, corrupt or truncated ({_first_line(exc)}).") from exc
    if pages > 1:
        # A fax or a scan of several pages: sending its first page alone would drop the rest without a word.
        raise FileInputError(f"{name}: a {pages}-page TIFF; convert it to PDF, or pass its pages as separate images.")
    return image, turned


def _load(image: Any, name: str, draft_to: tuple[int, int]) -> None:
    """Decode every pixel of ``image`` (a JPEG at the smallest scale not under ``draft_to``): a truncated or corrupt
    file fails here, as a ``FileInputError`` naming ``name``."""
    Image = _pil().Image
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            if image.format == "JPEG":
                image.draft("RGB" if image.mode not in ("L", "CMYK") else image.mode, draft_to)
            image.load()
    except Exception as exc:  # Pillow raises OSError, SyntaxError, ValueError ... on a damaged file
        raise FileInputError(f"{name}: not a readable image, corrupt or truncated ({_first_line(exc)}).") from exc


def _eighth(image: Any) -> tuple[int, int]:
    return max(1, image.width // 8), max(1, image.height // 8)


def _grey_palette(image: Any) -> bool:
    palette = image.getpalette() or []
    return all(palette[i] == palette[i + 1] == palette[i + 2] for i in range(0, len(palette) - 2, 3))


def _has_alpha(image: Any) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info)


def _pil() -> Any:
    try:
        import PIL.Image
    except ImportError:
        raise ConfigError(f"Reading images needs Pillow: install the documents extra ({DOCUMENTS_EXTRA}).") from None
    return PIL


def _first_line(exc: BaseException) -> str:
    text = reason(exc)
    return "Pillow does not recognise its data" if text.startswith("cannot identify image file") else text
