"""`-f`, read as kubectl reads it (k8s.io/cli-runtime's resource builder).

- `-f` may be given again and again, and one value may name several paths, comma-separated
  (kubectl's flag is a string slice): the objects of every file are read, in that order.
- `-f -` is standard input.
- A directory gives its files ending in .json, .yaml or .yml, in name order; its
  subdirectories too with -R/--recursive (depth first, names in order, as Go's filepath.Walk).
  A file named on its own is read whatever its name ends in.
- A path that does not exist is read as a glob pattern (`-f 'jobsets/*.yaml'`); one that
  matches nothing is `the path "..." does not exist`.
Before, `decide -f a -f b` read only b, and `-f DIR` was "cannot read: Is a directory".
Unlike kubectl, a FIFO, socket or device inside a directory is refused rather than opened (it
could block forever); named on its own it is read, and any input is read at most
MAX_INPUT_BYTES, refused at a NUL byte (decider/cli/common.py).
"""

from __future__ import annotations

import argparse
import csv
import glob
import os
from typing import Any

from decider.cli.common import UsageError, read_input

EXTENSIONS = (".json", ".yaml", ".yml")


def add_file_flags(parser: argparse.ArgumentParser, what: str) -> None:
    """-f (repeatable) and -R for a command that reads objects; `what` says which."""
    parser.add_argument("-f", "--file", "--filename", dest="file", action="append",
                        required=True, metavar="FILE",
                        help=f"{what}. A file, a directory (its .json, .yaml and .yml files) "
                             "or a glob pattern, '-' for stdin; repeat -f or separate with "
                             "commas to read several, as kubectl does")
    parser.add_argument("-R", "--recursive", action="store_true",
                        help="read the subdirectories of -f directories too")


def read_objects(args: argparse.Namespace) -> tuple[list[dict[str, Any]], str]:
    """Every object of every file -f names, in order, and how to name the input in a message
    (the file, or the files)."""
    from decider_client.documents import load_objects

    paths = input_paths(args.file, args.recursive)
    objects: list[dict[str, Any]] = []
    for path in paths:
        objects.extend(load_objects(read_input(path), path))
    return objects, inputs_named(paths)


def inputs_named(paths: list[str]) -> str:
    """The input in a message: the file, the files, or (a directory of 1,000) the first few
    and how many there are, so that the message stays one readable line."""
    if len(paths) <= 3:
        return ", ".join(paths)
    return f"{', '.join(paths[:2])} and {len(paths) - 2:,} more files"


def input_paths(values: list[str], recursive: bool) -> list[str]:
    """The files the -f values name, in order."""
    paths: list[str] = []
    for value in values:
        for path in _split(value):
            if path == "-":
                if "-" in paths:
                    raise UsageError("-f -: standard input can be read once")
                paths.append(path)
                continue
            if path.startswith(("http://", "https://")):
                raise UsageError(f"{path}: a URL is not read here; download it and -f the file")
            for match in _matches(path):
                found = _walk(match, recursive)
                if not found:
                    raise UsageError(f"{match}: no .json, .yaml or .yml file in the directory"
                                     + ("" if recursive else " (-R reads its subdirectories)"))
                paths.extend(found)
    return paths


def _split(value: str) -> list[str]:
    # pflag reads a string slice as one CSV record: `a.yaml,b.yaml`, quotes around a comma.
    try:
        fields = next(csv.reader([value]), [])
    except csv.Error:
        fields = [value]
    paths = [f for f in fields if f]
    if not paths:
        raise UsageError(f"-f {value!r}: names no file")
    return paths


def _matches(path: str) -> list[str]:
    if os.path.lexists(path):
        return [path]
    # kubectl globs only a path that does not exist; Go's filepath.Glob returns names sorted.
    matches = sorted(glob.glob(path))
    if not matches:
        raise UsageError(f'the path "{path}" does not exist')
    return matches


def _walk(root: str, recursive: bool) -> list[str]:
    """`root` itself if it is not a directory; else its files with EXTENSIONS, walking as Go's
    filepath.Walk does: entries in name order, a subdirectory where its name falls (only with
    `recursive`), symbolic links to directories not followed."""
    if not os.path.isdir(root):
        return [root]
    found: list[str] = []
    stack = [iter(_entries(root))]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
        elif entry.is_dir(follow_symlinks=False):
            if recursive:  # walked where its name falls, before the entries after it
                stack.append(iter(_entries(entry.path)))
        elif os.path.splitext(entry.name)[1] in EXTENSIONS:
            if not entry.is_file():
                # kubectl would open it and wait, maybe forever (a FIFO with no writer): a
                # file the user did not name is read only if it is a file. Named on its own
                # (-f FIFO, -f <(...)), it is read.
                raise UsageError(f"{entry.path}: not a regular file (a FIFO, socket or "
                                 "device in a directory is not read; name it with -f to)")
            found.append(entry.path)
    return found


def _entries(directory: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError as exc:
        raise UsageError(f"{directory}: cannot read: {exc.strerror or exc}") from None
