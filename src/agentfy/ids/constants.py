"""Numbers and alphabets of the ID format, in one place (every module reads them from here)."""

from typing import Final

#: Lower-case Crockford base32: digits and letters without i, l, o, u.
ID_SUFFIX_ALPHABET: Final = "0123456789abcdefghjkmnpqrstvwxyz"
#: The canonical suffix length: 12 characters, 60 bits.
ID_SUFFIX_LENGTH: Final = 12
#: The longest value any validator accepts, legacy formats included; checked before any parsing.
ID_MAX_LENGTH: Final = 80
#: The longest prefix the registry may hold.
ID_PREFIX_MAX_LENGTH: Final = 32
#: The all-zero UUID is never an identity, in any format.
NIL_UUID: Final = "00000000-0000-0000-0000-000000000000"
#: Lower-case hexadecimal digits (Securify's legacy suffix, UUIDs).
HEX_ALPHABET: Final = "0123456789abcdef"
