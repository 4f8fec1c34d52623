// The text form of the graph IR (TVM's Relay text format, simplified), for dumps, tests and
// diffs. Each call, tuple, projection and function is bound once to %N in producer-first order,
// so shared nodes stay shared and the text is as long as the graph, never its unfolded tree.
// parser.h reads the same text back: parse_module(to_text(m)) is structurally equal to m.
#pragma once
#include <cstdint>
#include <string>

#include "relay_ir/module.h"

namespace tessera::relay_ir {

struct PrintOptions {
  // Annotates each binding with its checked_type as a comment (not parsed back).
  bool show_types = false;
  // Constants with more elements print as constant(float32[64, 3], ...), which does not parse;
  // -1 prints every value.
  int64_t max_constant_elements = 16;
  // Writes where each call came from (CallNode::origin) as a comment.
  bool show_origins = true;
};

// def @name(...) -> type { ... } for each function, in the module's order, a blank line between.
// Within a function, %N count from 0 in producer-first order and the last line is the result,
// written out in place; a nested fn restarts at %0 unless it uses outer %N (a closure), where
// it continues the outer count so none is hidden. Variables sharing a name get _1, _2 suffixes.
// `-> type` appears where the body's checked_type is known; CallNode::origin is a comment.
std::string to_text(const Module& m, const PrintOptions& options = {});
// Bindings, then the result; free variables carry their type where they first appear
// (%x: float32[2]), so parse_expr reads the text back on its own.
std::string to_text(const Expr& e, const PrintOptions& options = {});

}  // namespace tessera::relay_ir
