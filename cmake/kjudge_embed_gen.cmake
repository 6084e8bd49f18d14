# Script mode: writes IN as a C++ string_view named SYMBOL into OUT, as hex bytes so any content
# (quotes, backslashes, non-ASCII) survives.
file(READ "${IN}" _hex HEX)
string(LENGTH "${_hex}" _len)
math(EXPR _bytes "${_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _arr "${_hex}")
file(WRITE "${OUT}" "#include <string_view>\nnamespace kj::embedded {\nstatic const char ${SYMBOL}_data[] = {${_arr} 0};\nextern const std::string_view ${SYMBOL};\nconst std::string_view ${SYMBOL}(${SYMBOL}_data, ${_bytes});\n}\n")
