"""A pickle reader that bounds what a file can make it build.

Python's unpickler builds whatever a pickle describes, and some of what a
small file can describe crashes or exhausts the reader afterwards: a dict
key of tuples nested 200,000 deep overflows the C stack when it is hashed
(the interpreter dies with SIGSEGV); a tuple of two copies of a tuple of
two copies of ... (memo references) is 2**40 items to any hash, comparison
or message that walks it; a 6,000-digit integer fails on Python's own
digit limit when shown. `BoundedUnpickler` is the pure-Python unpickler
(every length read goes through the file's `read`) with these bounds,
each checked before the object is built:

- `MAX_DEPTH` levels of nesting of any object built;
- `MAX_OBJECTS` opcodes read, and objects in any one value, counting a
  shared object each time it is used (so a walk over any value is
  bounded);
- `MAX_INTEGER_BYTES` bytes (or `MAX_INTEGER_DIGITS` digits) per integer;
- `MAX_LINE_BYTES` per text line (the protocol 0 opcodes);
- no `bytearray` (its declared length would be allocated before reading).

Each bound breaks with `WeightFileError` naming the file. A subclass
chooses what the pickle may name (`find_class`, `persistent_load`).
"""

import pickle
import struct

from elmo_core.errors import WeightFileError

# A state dict nests 4 levels (dict, tensor arguments, storage id, view);
# 100 is far beyond any weight file and far below what hashing or
# formatting a nested value can take (the C stack holds some 100,000).
MAX_DEPTH = 100
# An ELMoForManyLangs state dict is a few thousand opcodes (some 20 per
# tensor); a million takes about a second to read in Python and bounds
# any walk over a value to a million steps.
MAX_OBJECTS = 1_000_000
# 128 bits: sizes, offsets and strides are 64-bit, torch.save's legacy
# magic number is 80 bits.
MAX_INTEGER_BYTES = 16
MAX_INTEGER_DIGITS = 40
# Protocol 0 lines hold a number, a module or a name: 64 KiB is plenty.
MAX_LINE_BYTES = 1 << 16


class _LineBoundedFile:
    """A binary file whose `readline` reads at most `MAX_LINE_BYTES`."""

    def __init__(self, file):
        self.file = file

    def read(self, n=-1):
        return self.file.read(n)

    def readinto(self, buffer):
        return self.file.readinto(buffer)

    def readline(self):
        line = self.file.readline(MAX_LINE_BYTES + 1)
        if len(line) > MAX_LINE_BYTES:
            raise pickle.UnpicklingError(
                f"a text line longer than {MAX_LINE_BYTES:,} bytes"
            )
        return line


def _items_after_mark(unpickler):
    return list(unpickler.stack), None


def _last(count, container_at=None):
    """Rule: the last `count` stack items go into the object built (or
    into the container `container_at` items from the top)."""

    def rule(unpickler):
        stack = unpickler.stack
        items = stack[len(stack) - count :] if count else []
        if container_at is None or len(stack) < container_at:
            return items, None
        return items, stack[-container_at]

    return rule


def _into_marked_container(unpickler):
    below = unpickler.metastack[-1] if unpickler.metastack else []
    return list(unpickler.stack), below[-1] if below else None


# What each opcode that builds or grows an object puts into it: a rule
# (unpickler -> (items, container grown in place or None)). The result is
# the top of the stack once the opcode ran.
_RULES = {
    pickle.TUPLE: _items_after_mark,
    pickle.LIST: _items_after_mark,
    pickle.DICT: _items_after_mark,
    pickle.FROZENSET: _items_after_mark,
    pickle.OBJ: _items_after_mark,
    pickle.INST: _items_after_mark,
    pickle.EMPTY_TUPLE: _last(0),
    pickle.EMPTY_LIST: _last(0),
    pickle.EMPTY_DICT: _last(0),
    pickle.EMPTY_SET: _last(0),
    pickle.TUPLE1: _last(1),
    pickle.TUPLE2: _last(2),
    pickle.TUPLE3: _last(3),
    pickle.REDUCE: _last(2),
    pickle.NEWOBJ: _last(2),
    pickle.NEWOBJ_EX: _last(3),
    pickle.BINPERSID: _last(1),
    pickle.APPEND: _last(1, container_at=2),
    pickle.SETITEM: _last(2, container_at=3),
    pickle.BUILD: _last(1, container_at=2),
    pickle.APPENDS: _into_marked_container,
    pickle.SETITEMS: _into_marked_container,
    pickle.ADDITEMS: _into_marked_container,
}


class BoundedUnpickler(pickle._Unpickler):
    """The Python unpickler with the bounds of the module docstring.

    Args:
        file: a binary file (its reads should not return more than it
            holds; see `torch_pickle`'s reader).
        path: str, the file's name, for messages.
    """

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, file, path):
        super().__init__(_LineBoundedFile(file))
        self.path = path
        # id(object) -> (object, depth, size) of what this pickle built;
        # the object is kept so that its id is not reused.
        self._shapes = {}
        self._steps = 0

    def refuse(self, what):
        """A `WeightFileError`: the pickle describes `what`."""
        return WeightFileError(
            f"{self.path}: its pickle describes {what}; no weight file "
            "does. The file is damaged or hostile; refusing to read it."
        )

    def _shape(self, value):
        entry = self._shapes.get(id(value))
        if entry is None or entry[0] is not value:
            return 0, 1
        return entry[1], entry[2]

    def _measure(self, items, container):
        """(depth, size) of an object of `items` (or of `container` grown
        by them), checked against the bounds."""
        depth, size = (0, 1) if container is None else self._shape(container)
        for item in items:
            item_depth, item_size = self._shape(item)
            depth = max(depth, item_depth + 1)
            size += item_size
        if depth > MAX_DEPTH:
            raise self.refuse(
                f"objects nested more than {MAX_DEPTH} levels deep"
            )
        if size > MAX_OBJECTS:
            raise self.refuse(
                f"a value of more than {MAX_OBJECTS:,} objects (counting "
                "each use of a shared one)"
            )
        return depth, size

    def _step(self):
        self._steps += 1
        if self._steps > MAX_OBJECTS:
            raise self.refuse(f"more than {MAX_OBJECTS:,} objects")


def _bounded(opcode, load):
    rule = _RULES.get(opcode)

    def bounded_load(self):
        self._step()
        if rule is None:
            return load(self)
        items, container = rule(self)
        depth, size = self._measure(items, container)
        load(self)
        if self.stack:
            result = self.stack[-1]
            self._shapes[id(result)] = (result, depth, size)

    return bounded_load


def _load_int(self):
    # INT and LONG (protocol 0): a line of digits, "00"/"01" for bools.
    line = self.readline()
    digits = line.strip().lstrip(b"-").rstrip(b"L")
    if len(digits) > MAX_INTEGER_DIGITS:
        raise self.refuse(
            f"an integer of {len(digits):,} digits (at most "
            f"{MAX_INTEGER_DIGITS} expected)"
        )
    if line.strip() == b"01":
        self.append(True)
    elif line.strip() == b"00":
        self.append(False)
    else:
        self.append(int(line.strip().rstrip(b"L"), 0))


def _binary_long(size_format):
    def load_long(self):
        width = struct.calcsize(size_format)
        (count,) = struct.unpack(size_format, self.read(width))
        if count < 0 or count > MAX_INTEGER_BYTES:
            raise self.refuse(
                f"an integer of {count:,} bytes (at most "
                f"{MAX_INTEGER_BYTES} expected)"
            )
        self.append(pickle.decode_long(self.read(count)))

    return load_long


def _refuse_bytearray(self):
    raise self.refuse("a bytearray")


_OVERRIDES = {
    pickle.INT: _load_int,
    pickle.LONG: _load_int,
    pickle.LONG1: _binary_long("<B"),
    pickle.LONG4: _binary_long("<i"),
    pickle.BYTEARRAY8: _refuse_bytearray,
}
for _opcode, _load in list(BoundedUnpickler.dispatch.items()):
    _load = _OVERRIDES.get(bytes([_opcode]), _load)
    BoundedUnpickler.dispatch[_opcode] = _bounded(bytes([_opcode]), _load)
