# Compiles a file into the program: writes OUT, a C file defining NAME as the
# bytes of IN followed by a NUL, `const unsigned char NAME[]`. Run at build
# time (cmake -DIN=... -DOUT=... -DNAME=... -P embed.cmake), so the page
# template cli/lesson.html is edited as HTML and `remat lesson` needs no
# file beside it.
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# 16 bytes a line, for a compiler's messages and a person's eyes.
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}" "/* Generated from ${IN} by cli/embed.cmake: do not edit. */\n"
                    "const unsigned char ${NAME}[] = {\n${bytes}0x00};\n")
