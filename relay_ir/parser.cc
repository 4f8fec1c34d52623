#include "relay_ir/parser.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "relay_ir/transforms/infer_type.h"
#include "runtime/error.h"
#include "runtime/half.h"
#include "runtime/narrow_types.h"
#include "runtime/shape_size.h"

namespace tessera::relay_ir {

namespace {

// Syntactic nesting (calls written inside calls, tuple types inside tuple types, functions
// inside functions) recurses; printed text nests only a level or two, so a limit turns
// pathological input into an error instead of a stack overflow.
constexpr int kMaxNesting = 256;

enum class Tok { Ident, Number, String, Var, Binding, Global, Punct, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;  // identifier, number, string contents, name after % or @, punctuation
  int line = 1, col = 1;
};

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::End:
      return "end of input";
    case Tok::String:
      return "string \"" + t.text + "\"";
    case Tok::Var:
      return "%" + t.text;
    case Tok::Binding:
      return "%" + t.text;
    case Tok::Global:
      return "@" + t.text;
    default:
      return "'" + t.text + "'";
  }
}

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

class Lexer {
 public:
  explicit Lexer(const std::string& text) : s_(text) {}

  Token next() {
    skip_space_and_comments();
    Token t;
    t.line = line_;
    t.col = col_;
    if (i_ >= s_.size()) return t;
    char c = s_[i_];
    bool after_dot = last_was_dot_;
    last_was_dot_ = false;
    if (c == '%' || c == '@') {
      advance();
      if (c == '%' && i_ < s_.size() && digit(s_[i_])) {
        t.kind = Tok::Binding;
        while (i_ < s_.size() && digit(s_[i_])) t.text += advance();
      } else if (i_ < s_.size() && s_[i_] == '"') {
        t.kind = c == '%' ? Tok::Var : Tok::Global;
        t.text = string_body(t);
      } else if (i_ < s_.size() && ident_start(s_[i_])) {
        t.kind = c == '%' ? Tok::Var : Tok::Global;
        t.text = identifier();
      } else {
        error(t, std::string("expected a name after '") + c + "'");
      }
    } else if (c == '"') {
      t.kind = Tok::String;
      t.text = string_body(t);
    } else if (digit(c) || (c == '-' && i_ + 1 < s_.size() && (digit(s_[i_ + 1]) || ident_start(s_[i_ + 1])))) {
      t.kind = Tok::Number;
      if (c == '-') t.text += advance();
      if (ident_start(s_[i_])) {  // -inf, -nan
        std::string word = identifier();
        if (word != "inf" && word != "nan") error(t, "unexpected '-'");
        t.text += word;
      } else {
        number(t.text, after_dot);
      }
    } else if (ident_start(c)) {
      t.text = identifier();
      t.kind = t.text == "inf" || t.text == "nan" ? Tok::Number : Tok::Ident;
    } else if (c == '-' && i_ + 1 < s_.size() && s_[i_ + 1] == '>') {
      t.kind = Tok::Punct;
      advance();
      advance();
      t.text = "->";
    } else if (std::strchr("()[]{},;=:.", c)) {
      t.kind = Tok::Punct;
      t.text = advance();
      last_was_dot_ = c == '.';
    } else {
      error(t, std::string("unexpected character '") + c + "'");
    }
    return t;
  }

  [[noreturn]] static void error(const Token& at, const std::string& message) {
    fail(at.line, ":", at.col, ": ", message);
  }

 private:
  char advance() {
    char c = s_[i_++];
    if (c == '\n') ++line_, col_ = 1;
    else ++col_;
    return c;
  }

  void skip_space_and_comments() {
    while (i_ < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[i_]))) {
        advance();
      } else if (s_.compare(i_, 2, "//") == 0) {
        while (i_ < s_.size() && s_[i_] != '\n') advance();
      } else if (s_.compare(i_, 2, "/*") == 0) {
        Token start{Tok::End, "", line_, col_};
        size_t end = s_.find("*/", i_ + 2);
        if (end == std::string::npos) error(start, "unterminated comment");
        while (i_ < end + 2) advance();
      } else {
        return;
      }
    }
  }

  std::string identifier() {
    std::string out;
    while (i_ < s_.size() && ident_char(s_[i_])) out += advance();
    return out;
  }

  // Digits, a fraction and an exponent; only digits right after '.', where %3.0.1 projects twice.
  void number(std::string& out, bool digits_only) {
    auto digits = [&] {
      while (i_ < s_.size() && digit(s_[i_])) out += advance();
    };
    digits();
    if (digits_only) return;
    if (i_ + 1 < s_.size() && s_[i_] == '.' && digit(s_[i_ + 1])) {
      out += advance();
      digits();
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      size_t k = i_ + 1 + (i_ + 1 < s_.size() && (s_[i_ + 1] == '+' || s_[i_ + 1] == '-'));
      if (k < s_.size() && digit(s_[k])) {
        while (i_ < k) out += advance();
        digits();
      }
    }
  }

  std::string string_body(const Token& start) {
    advance();  // the opening quote
    std::string out;
    while (true) {
      if (i_ >= s_.size()) error(start, "unterminated string");
      char c = advance();
      if (c == '"') return out;
      if (c == '\\') {
        char e = i_ < s_.size() ? advance() : '\0';
        if (e != '"' && e != '\\') error(start, "unknown escape in string (only \\\" and \\\\ are escapes)");
        c = e;
      }
      out += c;
    }
  }

  const std::string& s_;
  size_t i_ = 0;
  int line_ = 1, col_ = 1;
  bool last_was_dot_ = false;
};

// Attribute names are identifiers; inf and nan lex as numbers but may name attributes too.
bool is_name(const Token& t) { return t.kind == Tok::Ident || (t.kind == Tok::Number && ident_start(t.text[0])); }

bool is_float_text(const std::string& s) { return s.find_first_of(".eEin") != std::string::npos; }

template <typename T>
bool parse_number(const std::string& s, T& out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

template <typename T>
void store(char* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

class Parser {
 public:
  explicit Parser(const std::string& text) : lexer_(text) {
    cur_ = lexer_.next();
    next_ = lexer_.next();
  }

  Module module() {
    Module m;
    while (cur_.kind != Tok::End) {
      expect_keyword("def");
      Token name = cur_;
      if (name.kind != Tok::Global)
        Lexer::error(name, "expected a function name @name after 'def', found " + describe(name));
      if (m.has(name.text)) Lexer::error(name, "@" + name.text + " is defined twice");
      advance();
      free_vars_.clear();
      m.add(name.text, function());
    }
    return m;
  }

  Expr expr_text() {
    scopes_.emplace_back();
    Expr e = body();
    if (cur_.kind != Tok::End)
      Lexer::error(cur_, "expected the end of the text after the result, found " + describe(cur_));
    return e;
  }

 private:
  struct Scope {
    std::unordered_map<std::string, Expr> bindings;  // by the digits after %
    std::unordered_map<std::string, Var> vars;       // parameters
  };

  void advance() {
    cur_ = next_;
    next_ = lexer_.next();
  }
  bool at(const char* punct) const { return cur_.kind == Tok::Punct && cur_.text == punct; }
  bool accept(const char* punct) {
    if (!at(punct)) return false;
    advance();
    return true;
  }
  void expect(const char* punct, const std::string& where) {
    if (!accept(punct))
      Lexer::error(cur_, "expected '" + std::string(punct) + "' " + where + ", found " + describe(cur_));
  }
  void expect_keyword(const char* word) {
    if (cur_.kind != Tok::Ident || cur_.text != word)
      Lexer::error(cur_, "expected '" + std::string(word) + "', found " + describe(cur_));
    advance();
  }

  // Items separated by ',' up to `close` (consumed), each read by `item`. Returns whether the
  // last item had a trailing ',' (allowed for tuples only: (a,) is a one-element tuple).
  template <typename F>
  bool sequence(const char* close, const std::string& what, bool trailing_comma, F&& item) {
    if (accept(close)) return false;
    while (true) {
      item();
      if (accept(close)) return false;
      if (!accept(","))
        Lexer::error(cur_, "expected ',' or '" + std::string(close) + "' after " + what + ", found " + describe(cur_));
      if (trailing_comma && accept(close)) return true;
    }
  }

  // Counts one level of syntactic nesting for as long as it lives.
  struct Nest {
    explicit Nest(Parser& p) : p(p) {
      if (++p.depth_ > kMaxNesting)
        Lexer::error(p.cur_,
                     "nested more than " + std::to_string(kMaxNesting) + " levels deep; bind inner values to %N");
    }
    ~Nest() { --p.depth_; }
    Parser& p;
  };

  // [attrs] (params) [-> type] { body }, after 'def @name' or 'fn'.
  Function function() {
    Nest nest(*this);
    Attrs attrs;
    if (accept("[")) sequence("]", "an attribute", false, [&] { attribute(attrs); });
    expect("(", "before the parameters");
    Scope scope;
    std::vector<Var> params;
    sequence(")", "a parameter", false, [&] {
      Token name = cur_;
      if (name.kind != Tok::Var) Lexer::error(name, "expected a parameter %name, found " + describe(name));
      advance();
      Type type = accept(":") ? parse_type() : Type();
      if (scope.vars.count(name.text)) Lexer::error(name, "duplicate parameter %" + name.text);
      params.emplace_back(name.text, type);
      scope.vars.emplace(name.text, params.back());
    });
    Token arrow = cur_;
    Type ret = accept("->") ? parse_type() : Type();
    expect("{", "before the function body");
    scopes_.push_back(std::move(scope));
    Expr result = body();
    scopes_.pop_back();
    expect("}", "after the function's result");
    if (ret) {
      // InferType keeps a checked_type it finds, so the annotation is checked, not trusted;
      // the types it leaves behind make the text print back with its `-> type`.
      Type inferred = checked(arrow, [&] { return infer_type(result); });
      if (!type_equal(inferred, ret))
        Lexer::error(arrow, "the function returns " + to_string(inferred) + ", not " + to_string(ret));
    }
    return relay_ir::function(std::move(params), result, std::move(attrs));
  }

  // %N = value; ... result
  Expr body() {
    while (cur_.kind == Tok::Binding && next_.kind == Tok::Punct && next_.text == "=") {
      Token number = cur_;
      advance();
      advance();
      Expr value = expr();
      expect(";", "after the bound value");
      if (!scopes_.back().bindings.emplace(number.text, value).second)
        Lexer::error(number, "%" + number.text + " is bound twice");
    }
    return expr();
  }

  Expr expr() {
    Nest nest(*this);
    Expr e = primary();
    while (true) {
      Token t = cur_;
      if (accept(".")) {
        if (cur_.kind != Tok::Number || is_float_text(cur_.text))
          Lexer::error(cur_, "expected a tuple index after '.', found " + describe(cur_));
        int64_t index = integer(cur_);
        advance();
        e = tuple_get(e, index);
      } else if (at("(")) {
        const auto* f = e.as<FunctionNode>();
        if (!f) Lexer::error(t, "only functions and operators can be called");
        auto [args, attrs] = arguments();
        if (!attrs.items().empty()) Lexer::error(t, "a call of a function takes no attributes");
        e = checked(t, [&, args = std::move(args)]() mutable { return call_function(Function(f), std::move(args)); });
      } else {
        return e;
      }
    }
  }

  Expr primary() {
    Token t = cur_;
    switch (t.kind) {
      case Tok::Var:
        return variable();
      case Tok::Binding: {
        advance();
        for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
          if (auto it = s->bindings.find(t.text); it != s->bindings.end()) return it->second;
        Lexer::error(t, "undefined %" + t.text);
      }
      case Tok::Ident: {
        advance();
        if (t.text == "fn") return function();
        if (t.text == "constant") return constant();
        if (!at("(")) Lexer::error(cur_, "expected '(' after operator " + t.text + ", found " + describe(cur_));
        auto [args, attrs] = arguments();
        // Moved into the lambda: C++17 cannot capture a structured binding.
        return checked(t, [&, args = std::move(args), attrs = std::move(attrs)]() mutable {
          return call(t.text, std::move(args), std::move(attrs));
        });
      }
      case Tok::Punct:
        if (t.text == "(") return tuple_or_parens();
        [[fallthrough]];
      default:
        Lexer::error(t, "expected an expression, found " + describe(t));
    }
  }

  // %name, or %name: type declaring a free variable where it first appears.
  Expr variable() {
    Token t = cur_;
    advance();
    const Var* found = nullptr;
    for (auto s = scopes_.rbegin(); s != scopes_.rend() && !found; ++s)
      if (auto it = s->vars.find(t.text); it != s->vars.end()) found = &it->second;
    if (!found)
      if (auto it = free_vars_.find(t.text); it != free_vars_.end()) found = &it->second;
    if (accept(":")) {
      if (found) Lexer::error(t, "%" + t.text + " is already defined");
      Var v(t.text, parse_type());
      return free_vars_.emplace(t.text, v).first->second;
    }
    if (!found)
      Lexer::error(t, "undefined %" + t.text + " (a free variable is declared with its type where it first appears: %" +
                          t.text + ": float32[...])");
    return *found;
  }

  // () (a,) (a, b) or (a)
  Expr tuple_or_parens() {
    advance();
    std::vector<Expr> fields;
    bool comma = sequence(")", "a tuple field", true, [&] { fields.push_back(expr()); });
    if (fields.size() == 1 && !comma) return fields[0];
    return tuple(std::move(fields));
  }

  // (args..., name=value, ...)
  std::pair<std::vector<Expr>, Attrs> arguments() {
    expect("(", "before the arguments");
    std::vector<Expr> args;
    Attrs attrs;
    sequence(")", "an argument", false, [&] {
      if (is_name(cur_) && next_.kind == Tok::Punct && next_.text == "=") {
        attribute(attrs);
      } else {
        if (!attrs.items().empty())
          Lexer::error(cur_, "expected an attribute name=value: arguments come before attributes");
        args.push_back(expr());
      }
    });
    return {std::move(args), std::move(attrs)};
  }

  void attribute(Attrs& attrs) {
    Token name = cur_;
    if (!is_name(name)) Lexer::error(name, "expected an attribute name, found " + describe(name));
    advance();
    expect("=", "after the attribute name");
    if (attrs.has(name.text)) Lexer::error(name, "attribute '" + name.text + "' is given twice");
    Token v = cur_;
    if (v.kind == Tok::String) {
      advance();
      return attrs.set(name.text, v.text);
    }
    if (v.kind == Tok::Number) {
      advance();
      if (is_float_text(v.text)) return attrs.set(name.text, real(v));
      return attrs.set(name.text, integer(v));
    }
    if (!accept("[")) Lexer::error(v, "expected an attribute value (number, string or list), found " + describe(v));
    std::vector<Token> items;
    bool floats = false;
    sequence("]", "a list element", false, [&] {
      if (cur_.kind != Tok::Number) Lexer::error(cur_, "expected a number in the list, found " + describe(cur_));
      floats |= is_float_text(cur_.text);
      items.push_back(cur_);
      advance();
    });
    if (floats) {
      std::vector<double> xs;
      for (const Token& t : items) xs.push_back(real(t));
      return attrs.set(name.text, xs);
    }
    std::vector<int64_t> xs;
    for (const Token& t : items) xs.push_back(integer(t));
    attrs.set(name.text, xs);
  }

  // float32[1, 3], (T, U), (T,), fn(T, U) -> V
  Type parse_type() {
    Nest nest(*this);
    Token t = cur_;
    if (accept("(")) {
      std::vector<Type> fields;
      bool comma = sequence(")", "a field type", true, [&] { fields.push_back(parse_type()); });
      if (fields.size() == 1 && !comma) Lexer::error(t, "a one-element tuple type is written (T,)");
      return tuple_type(std::move(fields));
    }
    if (t.kind != Tok::Ident) Lexer::error(t, "expected a type, found " + describe(t));
    advance();
    if (t.text == "fn") {
      expect("(", "before the parameter types");
      std::vector<Type> params;
      sequence(")", "a parameter type", false, [&] { params.push_back(parse_type()); });
      expect("->", "before the return type");
      return func_type(std::move(params), parse_type());
    }
    expect("[", "after the element type " + t.text + " (a tensor type is written " + t.text + "[1, 3])");
    std::vector<int64_t> shape;
    sequence("]", "a dimension", false, [&] {
      if (cur_.kind != Tok::Number || is_float_text(cur_.text))
        Lexer::error(cur_, "expected a dimension, found " + describe(cur_));
      shape.push_back(integer(cur_));
      advance();
    });
    return checked(t, [&] { return tensor_type(shape, DataType::parse(t.text)); });
  }

  // constant(float32[2, 2], [1, 2, 3, 4])
  Expr constant() {
    expect("(", "after 'constant'");
    Token type_at = cur_;
    Type type = parse_type();
    const auto* tt = type.as<TensorTypeNode>();
    if (!tt) Lexer::error(type_at, "a constant's type must be a tensor type, found " + to_string(type));
    expect(",", "after the constant's type");
    expect("[", "before the constant's values");
    // The values are counted before the array is allocated: the type may claim more than is given.
    int64_t numel = runtime::checked_numel(tt->shape, "a constant of type " + to_string(type));
    std::vector<Token> values;
    Token close = cur_;
    sequence("]", "a value", false, [&] {
      if (cur_.kind != Tok::Number) Lexer::error(cur_, "expected a number, found " + describe(cur_));
      if (static_cast<int64_t>(values.size()) == numel)
        Lexer::error(cur_, "too many values for a constant of type " + to_string(type));
      values.push_back(cur_);
      advance();
      close = cur_;
    });
    if (static_cast<int64_t>(values.size()) != numel)
      Lexer::error(close, "a constant of type " + to_string(type) + " needs " + std::to_string(numel) +
                              " values, got " + std::to_string(values.size()));
    expect(")", "after the constant's values");
    runtime::NDArray data = runtime::NDArray::empty(tt->shape, tt->dtype);
    for (size_t k = 0; k < values.size(); ++k)
      element(static_cast<char*>(data.data()) + k * tt->dtype.element_bytes(), tt->dtype, values[k]);
    return relay_ir::constant(data);
  }

  // Writes the value of number token t as one element of dtype at p.
  void element(char* p, DataType dtype, const Token& t) {
    auto range = [&] { Lexer::error(t, t.text + " is out of range for " + dtype.str()); };
    if (dtype.is_narrow_float()) {
      float f;
      if (!parse_number(t.text, f)) range();
      const uint32_t bits = runtime::narrow_float_bits(dtype, f);
      if (std::isfinite(f) && !std::isfinite(runtime::narrow_float_value(dtype, bits))) range();
      if (dtype.bits == 16) return store(p, static_cast<uint16_t>(bits));
      return store(p, static_cast<uint8_t>(bits));
    }
    if (dtype.is_float()) {
      if (dtype.bits == 64) return store(p, real(t));
      float f;  // read as float, not double: rounding twice could miss the printed float
      if (!parse_number(t.text, f)) range();
      if (dtype.bits == 32) return store(p, f);
      uint16_t h = runtime::float_to_half(f);
      if (std::isinf(runtime::half_to_float(h)) && !std::isinf(f)) range();
      return store(p, h);
    }
    if (is_float_text(t.text)) Lexer::error(t, "expected an integer for " + dtype.str() + ", found " + t.text);
    if (dtype.is_bool()) {
      if (t.text != "0" && t.text != "1") Lexer::error(t, "expected 0 or 1 for bool, found " + t.text);
      return store(p, static_cast<uint8_t>(t.text == "1"));
    }
    if (dtype.is_uint() && dtype.bits == 64) {
      uint64_t u;
      if (!parse_number(t.text, u)) range();
      return store(p, u);
    }
    int64_t v = integer(t);
    if (v < dtype.min_value() || v > dtype.max_value()) range();
    if (dtype.is_narrow()) return store(p, static_cast<uint8_t>(v & ((1 << dtype.bits) - 1)));
    // Little-endian: the low bytes of the 64-bit value are the narrow one.
    std::memcpy(p, &v, dtype.element_bytes());
  }

  int64_t integer(const Token& t) {
    int64_t v;
    if (!parse_number(t.text, v)) Lexer::error(t, "expected an integer, found " + t.text);
    return v;
  }
  double real(const Token& t) {
    double v;
    if (!parse_number(t.text, v)) Lexer::error(t, t.text + " is not a representable number");
    return v;
  }

  // Runs f, adding t's position to any Error it throws (unknown op, bad attribute, arity).
  template <typename F>
  auto checked(const Token& t, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const Error& e) {
      Lexer::error(t, e.what());
    }
  }

  Lexer lexer_;
  Token cur_, next_;
  std::vector<Scope> scopes_;
  std::unordered_map<std::string, Var> free_vars_;
  int depth_ = 0;
};

}  // namespace

Module parse_module(const std::string& text) { return Parser(text).module(); }

Expr parse_expr(const std::string& text) { return Parser(text).expr_text(); }

}  // namespace tessera::relay_ir
