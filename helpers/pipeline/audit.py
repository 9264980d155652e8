"""The grader's cells in a student's kernel (instructor kit): a clock per exercise and a watch on the course.

``python -m helpers grade`` puts three cells around each exercise of the notebook it runs: ``begin`` before
the answer cell (notes the course's modules and the kernel's hooks, and starts the exercise's clock),
``between`` after it (what the answer cell changed in the course's modules and in the hooks) and ``end``
after the check cell (what the check changed in the modules that decide a result and in the hooks; the
clock stops). Each writes a record (``AUDIT_KEY``) that the grader reads; a record that never comes means
the answer cell got in the way, which the grader notes too.

The hooks (``hooks``) are what student code could use to act on a later cell or to compile nothing: the
IPython callbacks (``events``: ``pre_run_cell`` and the others), input and AST transformers, the display
publisher and display functions a check's record goes through, ``sys`` trace and display hooks, the
notebook's own ``torch`` and ``helpers`` names, and torch's compile entry points as a grader cell sees them
(``torch.compile``, the callables of ``torch.compiler``, ``torch._dynamo`` and its ``eval_frame``:
``helpers.dynamo.exercises.entry_points``). A callback or transformer that student code added, or an
entry point it replaced, is named in the record and undone before the next cell runs, so the course's
check runs as written.

The clock raises ``ExerciseTimeout`` (a BaseException, so ``except Exception`` in the student's loop does
not swallow it) in whatever runs when the exercise's time is up, so an endless loop costs one exercise,
not the notebook. Code stuck inside a native call is stopped by the notebook's own timeout instead.
"""
from __future__ import annotations

import signal
import sys

AUDIT_KEY = "course_audit"
DECIDING = ("helpers.core.exercises", "helpers.pipeline", "builtins")  # watched during the check too
IGNORED = {"builtins.input", "builtins._", "builtins.__", "builtins.___"}  # the kernel swaps them per cell
_state: dict = {}


class ExerciseTimeout(BaseException):
    """The exercise ran past its time (raised by the grader's clock)."""


def _watched(name: str) -> bool:
    return name == "helpers" or name.startswith("helpers.") or name == "builtins"


def _code_id(value) -> int:
    """The identity of a function's code; an object whose ``__getattr__`` raises (a proxy) has none."""
    try:
        return id(getattr(value, "__code__", None))
    except Exception:
        return id(None)


def snapshot() -> dict[str, tuple[int, int, bool]]:
    """The identity of every name in the course's modules (and builtins), and of each function's code."""
    snap = {}
    for modname, mod in list(sys.modules.items()):
        if not _watched(modname) or mod is None:
            continue
        try:
            items = list(vars(mod).items())
        except TypeError:
            continue
        for key, value in items:
            if type(value).__name__ == "module":
                continue
            if f"{modname}.{key}" in IGNORED:
                continue
            flag = value is None or type(value) in (bool, int, float, str)  # a module's flag or counter
            snap[f"{modname}.{key}"] = (id(value), _code_id(value), flag)
            if isinstance(value, type) and str(getattr(value, "__module__", "")).startswith("helpers"):
                for attr, inner in list(vars(value).items()):
                    snap[f"{modname}.{key}.{attr}"] = (id(inner), _code_id(inner), False)
    return snap


def changed(before: dict, after: dict, only: tuple[str, ...] | None = None) -> list[str]:
    """The names whose object (or code) changed or that were deleted (new names are imports: not listed); a
    module's flag or counter (None, a bool, a number, a string: a lazy set-up) only in the deciding modules."""
    out = [k for k, v in before.items() if after.get(k) != v and (not v[2] or k.startswith(DECIDING))]
    if only:
        out = [k for k in out if k.startswith(only)]
    return sorted(out)[:20]


def _ipython():
    ipython = sys.modules.get("IPython")
    try:
        return ipython.get_ipython() if ipython is not None else None
    except Exception:
        return None


def _name(obj) -> str:
    try:
        return str(getattr(obj, "__name__", None) or type(obj).__qualname__)[:60]
    except Exception:
        return "?"


def _func(obj):
    """A method's function (a bound method is a new object at each access; its function is not)."""
    return getattr(obj, "__func__", obj)


def hooks() -> dict[str, tuple[str, list]]:
    """The kernel's hooks, each as (kind, [objects]): ``"list"`` for callbacks student code could add, ``"one"``
    for an object student code could replace (see the module docstring)."""
    out: dict[str, tuple[str, list]] = {}
    ip = _ipython()
    if ip is not None:
        events = getattr(getattr(ip, "events", None), "callbacks", None) or {}
        for event, callbacks in list(events.items()):
            out[f"IPython {event} callback"] = ("list", list(callbacks))
        for attr in ("input_transformers_cleanup", "input_transformers_post", "ast_transformers"):
            out[f"IPython {attr}"] = ("list", list(getattr(ip, attr, None) or []))
        pub = getattr(ip, "display_pub", None)
        out["IPython display_pub"] = ("one", [pub])
        out["IPython display_pub.publish"] = ("one", [_func(getattr(pub, "publish", None))])
        session = getattr(pub, "session", None)
        if session is not None:
            out["IPython display_pub.session.send"] = ("one", [_func(getattr(session, "send", None))])
        out["IPython displayhook"] = ("one", [getattr(ip, "displayhook", None)])
        user_ns = getattr(ip, "user_ns", {}) or {}
        for name in ("torch", "helpers"):  # watched while it is the module itself
            if name in sys.modules and user_ns.get(name) is sys.modules[name]:
                out[f"the notebook's name {name}"] = ("one", [sys.modules[name]])
    for modname, attr in (("IPython.display", "display"), ("IPython.core.display_functions", "display"),
                          ("IPython.core.display_functions", "publish_display_data"), ("IPython", "get_ipython")):
        mod = sys.modules.get(modname)
        if mod is not None:
            out[f"{modname}.{attr}"] = ("one", [getattr(mod, attr, None)])
    out["sys.displayhook"] = ("one", [sys.displayhook])
    out["sys.settrace"] = ("one", [sys.gettrace()])
    out["sys.setprofile"] = ("one", [sys.getprofile()])
    if "torch" in sys.modules:
        try:
            from ..core.exercises import WATCHED_ENTRY_POINTS  # registered by helpers.dynamo.exercises

            for source in WATCHED_ENTRY_POINTS:
                for name, obj in source().items():
                    out[name] = ("one", [obj])
        except Exception as exc:  # a torch that moved them: the watch says so rather than stopping
            out[f"torch's entry points ({type(exc).__name__})"] = ("one", [None])
    return out


def hooks_changed(before: dict, after: dict) -> list[str]:
    """What changed between two ``hooks`` snapshots, in words: callbacks added, objects replaced."""
    out = []
    for key, (kind, objs) in before.items():
        now = after.get(key, (kind, []))[1]
        if kind == "list":
            ids = {id(o) for o in objs}
            out += [f"{key} {_name(o)} added" for o in now if id(o) not in ids]
        elif not now or now[0] is not objs[0]:
            out.append(f"{key} replaced" if now else f"{key} {'rebound' if key.startswith('the notebook') else 'removed'}")
    return out


def undo(before: dict, after: dict) -> None:
    """Take out the callbacks and transformers student code added; put back the entry points it replaced."""
    ip = _ipython()
    for key, (kind, objs) in before.items():
        now = after.get(key, (kind, []))[1]
        try:
            if kind == "list" and ip is not None:
                added = [o for o in now if all(o is not b for b in objs)]
                if key.endswith(" callback"):
                    event = key[len("IPython "):-len(" callback")]
                    for cb in added:
                        ip.events.unregister(event, cb)
                else:
                    lst = getattr(ip, key[len("IPython "):])
                    for t in added:
                        lst.remove(t)
            elif kind == "one" and (not now or now[0] is not objs[0]):
                _put_back(key, objs[0], ip)
        except Exception:  # what cannot be undone is still named in the record
            continue


def _put_back(key: str, obj, ip) -> None:
    if key.startswith("the notebook's name ") and ip is not None:
        ip.user_ns[key.rsplit(" ", 1)[1]] = obj
    elif key == "IPython display_pub" and ip is not None:
        ip.display_pub = obj
    elif key == "IPython displayhook" and ip is not None:
        ip.displayhook = obj
    elif key == "sys.displayhook":
        sys.displayhook = obj
    elif key == "sys.settrace":
        sys.settrace(obj)
    elif key == "sys.setprofile":
        sys.setprofile(obj)
    elif key.startswith(("torch.", "IPython.")):
        modname, attr = key.rsplit(".", 1)
        mod = sys.modules.get(modname)
        if mod is not None:
            setattr(mod, attr, obj)


def _emit(number: str, phase: str, names: list[str], hooked: list[str] = ()) -> None:
    from IPython.display import display

    said = ([", ".join(names) + " changed"] if names else []) + list(hooked)
    line = f"(grader) exercise {number}, {phase}: " + ("; ".join(said) if said else "nothing changed")
    display({"text/plain": line}, raw=True,
            metadata={AUDIT_KEY: {"exercise": number, "phase": phase, "changed": names, "hooks": list(hooked)}})


def _watch_hooks(state: dict) -> list[str]:
    """What changed in the hooks since the last look, undone (see ``undo``), in words."""
    before, now = state.get("hooks", {}), hooks()
    said = hooks_changed(before, now)
    if said:
        undo(before, now)
        now = hooks()
    state["hooks"] = now
    return said


def _alarm(number: str, seconds: float) -> None:
    def ring(signum, frame):
        raise ExerciseTimeout(f"exercise {number} ran past {seconds:.0f} s (stopped by the grader's clock)")

    if seconds and hasattr(signal, "setitimer"):
        signal.signal(signal.SIGALRM, ring)
        signal.setitimer(signal.ITIMER_REAL, seconds)


def begin(number: str, seconds: float) -> None:
    _state[number] = {"snap": snapshot(), "hooks": hooks(), "seconds": seconds}
    _alarm(number, seconds)


def between(number: str) -> None:
    state = _state.get(number, {})
    now = snapshot()
    _emit(number, "answer", changed(state.get("snap", {}), now), _watch_hooks(state))
    state["snap"] = now
    _alarm(number, state.get("seconds", 0))  # the check runs the student's code too: a fresh clock for it


def end(number: str) -> None:
    if hasattr(signal, "setitimer"):
        signal.setitimer(signal.ITIMER_REAL, 0)
    state = _state.get(number, {})
    _emit(number, "check", changed(state.get("snap", {}), snapshot(), DECIDING), _watch_hooks(state))
