"""The workbench's tools, one class each: a subclass of :class:`Tool` with a ``name`` is registered
in :data:`TOOLS` as it is defined, and the keys, the Tools panel, F1's help and the controller read
the registry. Adding a tool is one class (in any module imported before the window opens).

A tool is a name, a key (a glfw key name, "F5"), a label (the panel's), a help line, a kind
("click": a left click picks; "brush": press, drag, release is a stroke of dabs), the brush test,
``apply(session, at, state) -> Change`` (the library call a dab or a click makes) and the panel's
widgets for its settings. Settings live in :class:`ToolState` (one per window), so switching tools
keeps each one's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TOOLS: dict = {}  # name -> the Tool, in the order the classes were defined (the panel's order)


class ToolRefused(Exception):
    """A tool cannot act as set (said in the panel's messages, nothing raised further)."""


@dataclass
class ToolState:
    tool: str = "pick"
    radius: float = 6.0
    clear: bool = False  # exclusion brush: clear noEffectDoodad instead of setting it
    layer: int = -1  # mapping brush: the layer to paint; -1: remap from the alpha maps
    texture: str = ""  # assign: the texture
    effect_id: int = 0  # assign: the effect id
    scope: str = "brush"  # assign: "map", "tile" or "brush"
    # effect-set editor
    set_models: list = field(default_factory=lambda: ["", "", "", ""])
    set_weights: list = field(default_factory=lambda: [0, 0, 0, 0])
    set_weights_even: bool = True  # the bag shared evenly over the models given (effects new-set's default)
    set_density: int = 8
    set_effect: int = 0  # 0: a new set; else the id being changed
    preview_id: int | None = None
    extra: dict = field(default_factory=dict)  # settings of tools added later, by tool name

    @property
    def current(self) -> "Tool":
        return TOOLS[self.tool]

    def brush(self) -> bool:
        """Whether the current tool paints (a stroke of dabs, the brush circle drawn)."""
        return TOOLS[self.tool].brush(self)


class Tool:
    """One tool (see the module docstring). Subclasses set the class attributes and override
    :meth:`apply` (and :meth:`widgets` for settings of their own)."""

    name: str = ""
    key: str | None = None  # glfw key name: "F5"
    label: str = ""
    help: str = ""
    kind: str = "click"  # "click" | "brush"

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.name:
            if any(t.key == cls.key and t.name != cls.name for t in TOOLS.values() if cls.key):
                raise ValueError(f"tool {cls.name!r}: key {cls.key} is taken")
            TOOLS[cls.name] = cls()

    def brush(self, state: ToolState) -> bool:
        return self.kind == "brush"

    def apply(self, session, at, state: ToolState):
        """The library call of a dab at world ``at`` = (x, y): a Change (None: nothing to do)."""
        return None

    def begin(self, bench, state: ToolState) -> None:
        """A brush stroke begins (``bench``: the window's Workbench); ToolRefused: no stroke."""

    def end(self, bench, state: ToolState) -> None:
        """A brush stroke ended (its dabs are one undo step already)."""

    def widgets(self, ui, state: ToolState) -> None:
        """The Tools panel's settings of this tool (``ui``: the Panels, ``ui.imgui`` the module)."""
        _, state.radius = ui.imgui.slider_float("radius", state.radius, 0.5, 100.0)


class PickTool(Tool):
    name, key, label, help = "pick", "F5", "pick", "pick"

    def widgets(self, ui, state):
        pass


class ExcludeTool(Tool):
    name, key, label, help, kind = "exclude", "F6", "exclusion brush", "exclusion brush", "brush"

    def apply(self, session, at, state):
        return session.exclude(at[0], at[1], state.radius, clear=state.clear)

    def widgets(self, ui, state):
        super().widgets(ui, state)
        _, state.clear = ui.imgui.checkbox("clear (grass again)", state.clear)


class MappingTool(Tool):
    name, key, label, help, kind = "mapping", "F7", "doodadMapping brush", "doodadMapping brush", "brush"

    def apply(self, session, at, state):
        return session.paint_mapping(at[0], at[1], state.radius, None if state.layer < 0 else state.layer)

    def widgets(self, ui, state):
        super().widgets(ui, state)
        _, state.layer = ui.imgui.slider_int("layer (-1: from alpha)", state.layer, -1, 3)


class AssignTool(Tool):
    name, key, label, help, kind = "assign", "F8", "assign effect", "assign effect", "brush"

    def brush(self, state):
        return state.scope == "brush"  # over the tile or the map: a click picks, the panel's button assigns

    def apply(self, session, at, state):
        if not state.texture:
            raise ToolRefused("assign: choose a texture first")
        return session.assign_texture(state.texture, state.effect_id, at=(at[0], at[1], state.radius))

    def widgets(self, ui, state):
        super().widgets(ui, state)
        ui.assign_widgets(state)


def tool_keys() -> dict:
    """glfw key name -> tool name."""
    return {t.key: t.name for t in TOOLS.values() if t.key}


def tool_choices() -> list:
    """(name, the panel's label with its key) of every tool, in the panel's order."""
    return [(t.name, f"{t.key} {t.label}" if t.key else t.label) for t in TOOLS.values()]


def tools_help() -> tuple:
    """F1's line for the tools: (keys, what they are)."""
    keyed = [t for t in TOOLS.values() if t.key]
    return " ".join(t.key for t in keyed), "tools: " + ", ".join(t.help for t in keyed)
