#include "kernels/verify/source_text.hpp"

#include <cctype>

namespace crucible::kernels {

stripped_source strip_source(const std::string& src) {
  stripped_source out;
  out.text.reserve(src.size());
  out.code.reserve(src.size());
  enum class st { code, line_comment, block_comment, str, chr, raw } s = st::code;
  std::string raw_end;
  for (size_t i = 0; i < src.size(); ++i) {
    char c = src[i];
    char next = i + 1 < src.size() ? src[i + 1] : '\0';
    auto put = [&](char t, char k) {
      out.text += t;
      out.code += k;
    };
    switch (s) {
      case st::code:
        if (c == '/' && next == '/') {
          s = st::line_comment;
          put(' ', ' ');
        } else if (c == '/' && next == '*') {
          s = st::block_comment;
          put(' ', ' ');
          put(' ', ' ');
          ++i;
        } else if (c == 'R' && next == '"' && (i == 0 || !(std::isalnum(src[i - 1]) || src[i - 1] == '_'))) {
          size_t open = src.find('(', i + 2);
          if (open == std::string::npos) {
            put(c, c);
            break;
          }
          raw_end = ")" + src.substr(i + 2, open - i - 2) + "\"";
          for (size_t k = i; k <= open; ++k) put(src[k], src[k] == '\n' ? '\n' : (k <= i + 1 ? src[k] : ' '));
          i = open;
          s = st::raw;
        } else if (c == '"') {
          s = st::str;
          put(c, c);
        } else if (c == '\'' && !(i > 0 && std::isxdigit(static_cast<unsigned char>(src[i - 1])) &&
                                  std::isxdigit(static_cast<unsigned char>(next)))) {
          s = st::chr;  // (a ' between hex digits is a C++14 digit separator)
          put(c, c);
        } else {
          put(c, c);
        }
        break;
      case st::line_comment:
        if (c == '\n') {
          s = st::code;
          put('\n', '\n');
        } else if (c == '\\' && next == '\n') {
          put(' ', ' ');
          put('\n', '\n');
          ++i;
        } else {
          put(' ', ' ');
        }
        break;
      case st::block_comment:
        if (c == '*' && next == '/') {
          s = st::code;
          put(' ', ' ');
          put(' ', ' ');
          ++i;
        } else {
          put(c == '\n' ? '\n' : ' ', c == '\n' ? '\n' : ' ');
        }
        break;
      case st::str:
      case st::chr: {
        char quote = s == st::str ? '"' : '\'';
        if (c == '\\' && next != '\0') {
          put(c, ' ');
          put(next, next == '\n' ? '\n' : ' ');
          ++i;
        } else if (c == quote || c == '\n') {
          s = st::code;
          put(c, c);
        } else {
          put(c, ' ');
        }
        break;
      }
      case st::raw:
        if (src.compare(i, raw_end.size(), raw_end) == 0) {
          for (char k : raw_end) put(k, k);
          i += raw_end.size() - 1;
          s = st::code;
        } else {
          put(c, c == '\n' ? '\n' : ' ');
        }
        break;
    }
  }
  return out;
}

}  // namespace crucible::kernels
