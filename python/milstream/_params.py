"""The estimators' parameters: the command line's fit options, read from the library.

The native core lists every option of ``milstream train`` (``FitOptions`` in the library,
parsed by the same code), so a parameter here has the option's name (``--shapelet-length``
is ``shapelet_length``), its default and its help. A value goes back to the library as the
option's text, and the library's parser checks it.
"""

from __future__ import annotations

import inspect
import keyword
import numbers
import re
from dataclasses import dataclass

from . import _core

# Options that say how to read a file or what to print: nothing to fit with in Python.
_NOT_PARAMETERS = {"format", "json", "quiet"}


@dataclass(frozen=True)
class Option:
    name: str  # the Python parameter name
    long: str  # the command line's option name, without --
    default: object
    flag: bool  # a switch: True passes it
    list: bool  # a comma-separated list: a list, tuple or one value
    help: str


def _python_default(text, flag):
    """The command line's default as a Python value: False for a switch, None when the
    library decides, else a number when it is one, else the text ("auto", "op2")."""
    if flag:
        return False
    if text is None:
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _read_options():
    out = []
    for long, default, flag, is_list, help_text in _core.fit_options():
        if long in _NOT_PARAMETERS:
            continue
        # `--model` picks the kind: MILClassifier's `kind`; ShapeletClassifier is lpboost.
        name = "kind" if long == "model" else long
        if keyword.iskeyword(name):
            name += "_"  # --lambda is `lambda_`
        out.append(
            Option(
                name=name,
                long=long.replace("_", "-"),
                default=_python_default(default, flag),
                flag=flag,
                list=is_list,
                help=help_text,
            )
        )
    return tuple(out)


OPTIONS = _read_options()
BY_NAME = {o.name: o for o in OPTIONS}
BY_LONG = {o.long: o for o in OPTIONS}


def signature(names, extra):
    """An ``__init__`` signature with ``names`` (keyword parameters, the command line's
    defaults) and ``extra`` ((name, default) pairs of Python-only parameters)."""
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for n in names:
        params.append(
            inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=BY_NAME[n].default)
        )
    for n, d in extra:
        params.append(inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d))
    return inspect.Signature(params)


def _text(name, value):
    """One value as the option's text; TypeError for a type no option takes."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise TypeError(
            f"{name} must be a number or a string, got {type(value).__name__} {value!r}"
        )
    return str(value)


def to_args(values):
    """The command line's arguments for ``values`` (parameter name -> value)."""
    args = []
    for name, value in values.items():
        opt = BY_NAME[name]
        if value is None:
            continue  # the library's default
        if opt.flag:
            if not isinstance(value, (bool,)) and type(value).__name__ != "bool_":
                raise TypeError(f"{name} must be True or False, got {value!r}")
            if value:
                args.append(f"--{opt.long}")
            continue
        if opt.list and isinstance(value, (list, tuple)):
            if not value:
                continue
            text = ",".join(_text(name, v) for v in value)
        else:
            text = _text(name, value)
        args += [f"--{opt.long}", text]
    return args


_OPTION_IN_MESSAGE = re.compile(r"'--([a-z0-9-]+)(?: <[^>]*>)?'|--([a-z0-9-]+)")


def python_message(message):
    """A library or parser message with each ``--option`` named as its parameter."""

    def name(m):
        long = m.group(1) or m.group(2)
        opt = BY_LONG.get(long)
        return f"parameter '{opt.name}'" if opt else m.group(0)

    text = message.removeprefix("error: ")
    text = text.split("\n\nUsage:")[0].split("\n\nFor more information")[0]
    return _OPTION_IN_MESSAGE.sub(name, text).strip()
