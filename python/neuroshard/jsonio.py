#===- jsonio.py - Reading JSON and JSON Lines files ----------------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Reading the project's JSON and JSON Lines files with errors that name the
file, the line and the problem. Each caller passes its own exception class,
so that its command-line tool reports the error in its own words."""

import json
from typing import Any, Iterator, Tuple, Type


def read_json(path: str, what: str, error: Type[Exception]) -> Any:
    """The parsed content of a JSON file; `what` names the file in errors
    ("pool", or "" for the path alone)."""
    prefix = what + " " if what else ""
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise error("cannot read %s'%s': %s" % (prefix, path, e.strerror))
    except json.JSONDecodeError as e:
        raise error("%s'%s' is not valid JSON: %s" % (prefix, path, e))


def json_lines(path: str, what: str,
               error: Type[Exception]) -> Iterator[Tuple[int, str, Any]]:
    """Yields (line number, "WHAT 'PATH' line N", parsed value) for every
    non-blank line of a JSON Lines file; raises `error` for an unreadable
    file or a line that is not JSON."""
    try:
        f = open(path)
    except OSError as e:
        raise error("cannot read %s '%s': %s" % (what, path, e.strerror))
    with f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            where = "%s '%s' line %d" % (what, path, number)
            try:
                value = json.loads(line)
            except json.JSONDecodeError as e:
                raise error("%s is not valid JSON: %s" % (where, e))
            yield number, where, value
