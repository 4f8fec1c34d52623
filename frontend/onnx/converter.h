// Converting one ONNX node into graph-IR expressions. Each operator family registers its
// converters in its own file (ops_*.cc) through register_*_converters; a converter reads the
// node's attributes and inputs from a ConvertContext and returns one expression per output.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "relay_ir/expr.h"

namespace tessera::frontend::onnx {

// "Conv (node 'conv1', opset 13)": how errors name a node.
std::string node_description(const ::onnx::NodeProto& node, int opset);

class ConvertContext {
 public:
  // `value_inputs`: the inputs it may read as constants (ConverterTable::Entry::value_inputs).
  ConvertContext(const ::onnx::NodeProto& node, int opset, std::vector<relay_ir::Expr> inputs,
                 std::vector<std::string> input_names, std::string base_dir, std::vector<int> value_inputs);

  const ::onnx::NodeProto& node() const { return node_; }
  const std::string& op_type() const { return node_.op_type(); }
  int opset() const { return opset_; }
  // "Conv (node 'conv1')", for messages.
  std::string where() const;
  [[noreturn]] void error(const std::string& message) const;

  // --- inputs ------------------------------------------------------------------------
  size_t num_inputs() const { return inputs_.size(); }
  // False for an input that is absent or given as "" (an omitted optional input).
  bool has_input(size_t i) const {
    return (i < inputs_.size() && inputs_[i].defined()) || (i < dim_inputs_.size() && !dim_inputs_[i].empty());
  }
  const relay_ir::Expr& input(size_t i) const;  // throws if absent
  const relay_ir::TensorTypeNode& input_type(size_t i) const;
  // The input's value when it is known at import time (initializer, Constant, bound input,
  // folded subgraph). Throws BindingRequired when it comes from a graph input. Only a declared
  // value input may be read so.
  runtime::NDArray constant_input(size_t i, const std::string& what) const;
  std::optional<runtime::NDArray> try_constant_input(size_t i) const;
  // A constant int64/int32 input as integers (e.g. a shape or axes input).
  std::vector<int64_t> constant_ints(size_t i, const std::string& what) const;
  // A value input of a model of symbolic sizes: its elements as expressions of the dimension
  // variables (frontend/onnx/dim_values.h), or a constant's as integers.
  std::vector<tensor_ir::Expr> dim_ints(size_t i, const std::string& what) const;
  bool is_dim_input(size_t i) const { return i < dim_inputs_.size() && !dim_inputs_[i].empty(); }
  // Gives value input i as the elements of a shape value of symbolic sizes.
  void set_dim_input(size_t i, std::vector<tensor_ir::Expr> elements);

  // --- attributes --------------------------------------------------------------------
  bool has_attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  int64_t attr_int(const std::string& name) const;  // required
  float attr_float(const std::string& name, float fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> fallback) const;
  std::vector<float> attr_floats(const std::string& name, std::vector<float> fallback) const;
  runtime::NDArray attr_tensor(const std::string& name) const;  // required
  // Fails naming every attribute of the node not in `known` (silently ignoring one could
  // change the result).
  void check_attrs(std::initializer_list<const char*> known) const;

  // A call of op `name` whose origin is this node.
  relay_ir::Expr call(const std::string& name, std::vector<relay_ir::Expr> args, relay_ir::Attrs attrs = {}) const;

 private:
  const ::onnx::AttributeProto* find_attr(const std::string& name) const;

  const ::onnx::NodeProto& node_;
  int opset_;
  std::vector<relay_ir::Expr> inputs_;
  std::vector<std::string> input_names_;
  std::string base_dir_;
  std::vector<int> value_inputs_;
  std::vector<std::vector<tensor_ir::Expr>> dim_inputs_;  // by input; empty where it is none
};

using Converter = std::function<std::vector<relay_ir::Expr>(ConvertContext&)>;

class ConverterTable {
 public:
  struct Entry {
    Converter convert;
    std::string unsupported;    // non-empty: the reason the op is not supported
    bool program_step = false;  // control flow or a data-dependent shape: a step of a program
    // The inputs the converter reads as constants (a shape, a count, axes, a padding value): a
    // program ends its stage before a node whose value input is computed from the data, so that
    // the next stage takes it as an input and binds it (frontend/onnx/program.cc).
    std::vector<int> value_inputs;
    // Of those, the ones the converter reads as a tensor while the model runs when the data
    // computes them (Trilu's k, Pad's value), so they cut no stage and bind nothing.
    std::vector<int> run_time_inputs;
  };
  void add(const std::string& op_type, Converter c, std::vector<int> value_inputs = {},
           std::vector<int> run_time_inputs = {});
  // Known but deliberately unsupported (sequences, random numbers, ...).
  void unsupported(const std::string& op_type, const std::string& reason);
  // Run by the program executor between compiled stages (frontend/onnx/program.h).
  void program_step(const std::string& op_type);
  const Entry* find(const std::string& domain, const std::string& op_type) const;
  const std::map<std::string, Entry>& entries() const { return entries_; }

  static const ConverterTable& global();

 private:
  // By op_type for domain ai.onnx ("" or "ai.onnx"); by domain-qualified name for ai.onnx.ml
  // ("ai.onnx.ml.Binarizer").
  std::map<std::string, Entry> entries_;
};

// The families (ops_*.cc); converters.cc lists them.
void register_math_converters(ConverterTable& t);
void register_nn_converters(ConverterTable& t);
void register_transform_converters(ConverterTable& t);
void register_extra_converters(ConverterTable& t);
void register_ml_converters(ConverterTable& t);               // ops_ml.cc: the ai.onnx.ml domain
void register_ml_tree_ensemble_converter(ConverterTable& t);  // ops_ml_tree_ensemble.cc
void register_all_converters(ConverterTable& t);

}  // namespace tessera::frontend::onnx
