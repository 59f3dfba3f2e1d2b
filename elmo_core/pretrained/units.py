"""Sizes in human units for messages and listings."""

_UNITS = ("KiB", "MiB", "GiB", "TiB")


def human_size(size):
    """`size` bytes as text: `"512 bytes"`, `"1.5 KiB"`, `"357.1 MiB"`."""
    if size < 1024:
        return f"{size} byte{'' if size == 1 else 's'}"
    value = float(size)
    for unit in _UNITS:
        value /= 1024
        if value < 1024 or unit == _UNITS[-1]:
            return f"{value:.1f} {unit}"
