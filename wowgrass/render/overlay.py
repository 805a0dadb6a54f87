"""A text overlay over the whole frame: the stats line along the bottom and a label per view.

Text is rasterised with Pillow's built-in bitmap font into an RGBA texture, rebuilt only when
the text changes (the stats line changes about once a second), and drawn as alpha-blended
rectangles after the views, with the viewport and scissor reset to the whole frame.
"""

from __future__ import annotations

import numpy as np

from .gl.state import disable, enable, use_texture
from .views import reset_viewport

BAR = (12, 16, 20, 170)  # the translucent band behind the text


def text_image(text: str, width: int | None = None, *, scale: int = 1, pad: int = 3) -> np.ndarray:
    """(h, w, 4) uint8: ``text`` in white on the translucent band, ``width`` pixels wide (or tight)."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default()
    x0, y0, x1, y1 = ImageDraw.Draw(Image.new("RGBA", (1, 1))).textbbox((0, 0), text or " ", font=font)
    w = (x1 + 2 * pad) if width is None else max(int(width) // scale, 1)
    h = y1 + 2 * pad
    img = Image.new("RGBA", (w, h), BAR)
    ImageDraw.Draw(img).text((pad, pad - y0 // 2), text, fill=(240, 240, 235, 255), font=font)
    if scale > 1:
        img = img.resize((w * scale, h * scale), Image.NEAREST)
    return np.asarray(img, np.uint8)


class Overlay:
    """Labels (one per view) and a full-width status line, drawn in one pass after the views."""

    def __init__(self, ctx, program):
        self.ctx, self.program = ctx, program
        self.vao = ctx.vertex_array(program, [])
        self._textures: dict = {}  # key -> (text, width, texture)
        self.last_status: str | None = None  # the stats line the last draw showed

    def _texture(self, key, text, width, scale):
        old = self._textures.get(key)
        if old is not None and old[0] == text and old[1] == width:
            return old[2]
        if old is not None:
            old[2].release()
        img = np.ascontiguousarray(text_image(text, width, scale=scale)[::-1])  # GL rows bottom-up
        from .gl.memory import gpu_memory

        tex = gpu_memory(self.ctx).track(self.ctx.texture((img.shape[1], img.shape[0]), 4, img.tobytes()), "frame")
        self._textures[key] = (text, width, tex)
        return tex

    def draw(self, size, views, labels, status: str | None):
        """Reset viewport and scissor to ``size`` and draw each view's label (``labels``: one
        per view, "" for none) at its top-left corner and ``status`` along the whole bottom edge."""
        import moderngl

        ctx = self.ctx
        w, h = int(size[0]), int(size[1])
        scale = 2 if h >= 900 else 1
        reset_viewport(ctx, size)
        disable(ctx, moderngl.DEPTH_TEST | moderngl.CULL_FACE)
        enable(ctx, moderngl.BLEND)
        ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        items = []
        for i, (v, label) in enumerate(zip(views, labels)):
            if label:
                tex = self._texture(("label", i), label, None, scale)
                x, y = v.rect[0] + 6, v.rect[1] + v.rect[3] - 6 - tex.height
                items.append((tex, x, y))
        self.last_status = status or None
        if status:
            tex = self._texture("status", status, w, scale)
            items.append((tex, 0, 0))
        for tex, x, y in items:
            x0, y0 = 2 * x / w - 1, 2 * y / h - 1
            x1, y1 = 2 * (x + tex.width) / w - 1, 2 * (y + tex.height) / h - 1
            self.program["uRect"].value = (x0, y0, x1, y1)
            use_texture(ctx, tex, 0)
            self.vao.render(moderngl.TRIANGLE_STRIP, vertices=4)
        disable(ctx, moderngl.BLEND)
        return len(items)

    def release(self):
        for _, _, tex in self._textures.values():
            tex.release()
        self._textures.clear()
        self.vao.release()
