# cmake -DIN=FILE -DOUT=FILE.cpp -DNAME=identifier -P embed_text.cmake: FILE's text as
# `extern const char* const NAME` in namespace crucible::kernels (the eval worker's PTX, built at build time).
file(READ "${IN}" text)
file(WRITE "${OUT}" "// Generated from ${IN} by cmake/embed_text.cmake.\nnamespace crucible::kernels {\nextern const char* const ${NAME};\nconst char* const ${NAME} = R\"crucible_text(${text})crucible_text\";\n}  // namespace crucible::kernels\n")
