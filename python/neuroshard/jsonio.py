#===- jsonio.py - Reading and updating JSON and JSON Lines files ----------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Reading the project's JSON and JSON Lines files, and setting one field
of a JSON file in place, with errors that name the file, the line and the
problem. Each caller passes its own exception class, so that its
command-line tool reports the error in its own words."""

import json
import os
from typing import Any, Iterator, Optional, Tuple, Type


def _refuse_constant(name: str) -> Any:
    # Python's json takes NaN and Infinity, which JSON does not have and no
    # file of the project may hold.
    raise ValueError("%s is not a JSON number" % name)


def _loads(text: str) -> Any:
    """json.loads without NaN/Infinity; a document nested too deeply for
    the parser is a ValueError, not a RecursionError."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError("the document nests too deeply")


def read_json(path: str, what: str, error: Type[Exception]) -> Any:
    """The parsed content of a JSON file; `what` names the file in errors
    ("pool", or "" for the path alone)."""
    return _read_json_text(path, what, error)[0]


def _read_json_text(path: str, what: str,
                    error: Type[Exception]) -> Tuple[Any, str]:
    """read_json's parsed content, with the file's text."""
    prefix = what + " " if what else ""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        return _loads(text), text
    except OSError as e:
        raise error("cannot read %s'%s': %s" % (prefix, path, e.strerror))
    except UnicodeDecodeError as e:
        raise error("%s'%s' is not UTF-8 text (byte %d)" %
                    (prefix, path, e.start))
    except ValueError as e:
        raise error("%s'%s' is not valid JSON: %s" % (prefix, path, e))


def json_lines(path: str, what: str,
               error: Type[Exception]) -> Iterator[Tuple[int, str, Any]]:
    """Yields (line number, "WHAT 'PATH' line N", parsed value) for every
    non-blank line of a JSON Lines file; raises `error` for an unreadable
    file or a line that is not JSON."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise error("cannot read %s '%s': %s" % (what, path, e.strerror))
    with f:
        for number, raw in enumerate(f, start=1):
            where = "%s '%s' line %d" % (what, path, number)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise error("%s is not UTF-8 text (byte %d)" % (where, e.start))
            if not line.strip():
                continue
            try:
                value = _loads(line)
            except ValueError as e:
                raise error("%s is not valid JSON: %s" % (where, e))
            yield number, where, value


def _indent(text: str) -> Optional[int]:
    """The indent of a JSON document as json.dump wrote it: that of its
    first indented line, or None for a one-line document."""
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped and len(stripped) < len(line):
            return len(line) - len(stripped)
    return None


def set_field(path: str, key: str, value: Any,
              error: Type[Exception]) -> None:
    """Sets `key` of the JSON object in file `path` to `value`, in place:
    the other fields and their order are kept, the file's indentation too,
    and the file is replaced whole (written beside it, then renamed)."""
    document, text = _read_json_text(path, "", error)
    document[key] = value
    temporary = path + ".tmp"
    try:
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(document, f, indent=_indent(text))
            f.write("\n")
        os.replace(temporary, path)
    except OSError as e:
        raise error("cannot write '%s': %s" % (path, e.strerror))
