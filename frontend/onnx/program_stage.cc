#include "frontend/onnx/program_stage.h"

#include <algorithm>
#include <cctype>

#include "frontend/onnx/model_proto.h"
#include "frontend/onnx/tensor_proto.h"

namespace tessera::frontend::onnx {

using runtime::NDArray;

namespace {

// A stage binds an input to its value when a converter needs it as a constant (a shape, an axis,
// a count); binding a larger one would build the stage again for every new value of real data.
constexpr int64_t kMaxBoundElements = 4096;

class OnnxStage : public relay_ir::StageSource {
 public:
  OnnxStage(::onnx::ModelProto proto, std::vector<std::string> inputs, std::vector<std::string> constant_names,
            std::shared_ptr<const std::map<std::string, NDArray>> constants, std::string base_dir,
            ConstantEvaluator evaluate)
      : proto_(std::move(proto)),
        inputs_(std::move(inputs)),
        constant_names_(std::move(constant_names)),
        constants_(std::move(constants)),
        base_dir_(std::move(base_dir)),
        evaluate_(std::move(evaluate)) {}

  relay_ir::StageSpecialization specialize(const std::vector<NDArray>& values,
                                           const std::vector<bool>& bound) const override {
    std::vector<bool> b = bound;
    for (;;) {
      try {
        std::vector<runtime::DataType> dtypes;
        for (const NDArray& v : values) dtypes.push_back(v.dtype());
        return {import_model_proto(at(dtypes), base_dir_, options(values, b)), b};
      } catch (const BindingRequired& e) {
        if (!bind_more(e, values, b)) throw;
      }
    }
  }

  relay_ir::Module specialize_symbolic(
      const std::vector<runtime::BufferSpec>& inputs, const std::vector<size_t>& by_shape,
      const std::vector<std::optional<runtime::SymbolicShape>>& values) const override {
    std::vector<runtime::DataType> dtypes;
    for (const runtime::BufferSpec& in : inputs) dtypes.push_back(in.dtype);
    ::onnx::ModelProto m = at(dtypes);
    ImportOptions o;
    o.evaluate = evaluate_;
    o.symbolic = true;
    for (const std::string& c : constant_names_) o.bind[c] = constants_->at(c);
    ::onnx::GraphProto prelude;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (std::find(by_shape.begin(), by_shape.end(), i) != by_shape.end()) {
        take_by_shape(m, i, inputs.at(i), i < values.size() ? values[i] : std::nullopt, o, prelude);
        continue;
      }
      auto* shape =
          m.mutable_graph()->mutable_input(static_cast<int>(i))->mutable_type()->mutable_tensor_type()->mutable_shape();
      for (const runtime::ShapeExpr& d : inputs.at(i).shape) {
        auto* dim = shape->add_dim();
        if (d.is_constant()) dim->set_dim_value(d.constant());
        else if (d.var_name()) dim->set_dim_param(*d.var_name());
        // else unnamed: a variable of its own (the stage binds it from the input's shape)
      }
    }
    prelude.mutable_node()->MergeFrom(m.graph().node());
    m.mutable_graph()->mutable_node()->Swap(prelude.mutable_node());
    try {
      return import_model_proto(m, base_dir_, o);
    } catch (const BindingRequired& e) {
      std::vector<size_t> needed;
      for (const std::string& name : e.inputs)
        for (size_t i = 0; i < inputs_.size(); ++i)
          if (inputs_[i] == name && std::find(by_shape.begin(), by_shape.end(), i) == by_shape.end())
            needed.push_back(i);
      if (!needed.empty()) throw relay_ir::ValuesRequired(e.need, needed);
      fail(e.need,
           ", and here it is a value the model computes while it runs (built for each value it meets in "
           "this process, never ahead of time)");
    }
  }

 private:
  // The stage's model with its inputs' element types (the importer takes their shapes as options).
  ::onnx::ModelProto at(const std::vector<runtime::DataType>& dtypes) const {
    ::onnx::ModelProto m = proto_;
    auto add_input = [&](const std::string& name, runtime::DataType dtype) {
      auto* v = m.mutable_graph()->add_input();
      v->set_name(name);
      v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx_type_of(dtype));
    };
    for (size_t i = 0; i < inputs_.size(); ++i) add_input(inputs_[i], dtypes.at(i));
    for (const std::string& c : constant_names_) add_input(c, constants_->at(c).dtype());
    return m;
  }

  ImportOptions options(const std::vector<NDArray>& values, const std::vector<bool>& bound) const {
    ImportOptions o;
    o.evaluate = evaluate_;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (!bound[i]) {
        o.shapes[inputs_[i]] = values[i].shape();
        continue;
      }
      NDArray copy = NDArray::empty(values[i].shape(), values[i].dtype());  // the build keeps it as a constant
      copy.copy_from(values[i]);
      o.bind[inputs_[i]] = copy;
    }
    for (const std::string& c : constant_names_) o.bind[c] = constants_->at(c);
    return o;
  }

  // Stage input i, an integer tensor of static shape, taken as a carrier of uint8 and shape
  // (its values..., 0) that values_as_shape makes: the nodes put first in `prelude` give its values
  // back under its name as Shape and Gather of the carrier, which the importer keeps as dimension
  // variables (frontend/onnx/dim_values.h), those of `known` where it has a constant or a variable.
  void take_by_shape(::onnx::ModelProto& m, size_t i, const runtime::BufferSpec& spec,
                     const std::optional<runtime::SymbolicShape>& known, ImportOptions& o,
                     ::onnx::GraphProto& prelude) const {
    const std::string& x = inputs_[i];
    if (!spec.dtype.is_integer() || !runtime::is_static(spec.shape) || spec.shape.size() > 1)
      fail("the stage needs the values of '", x, "', ", spec.dtype.str(), runtime::symbolic_shape_str(spec.shape),
           ", which only an integer scalar or list of a known length can give as sizes");
    const std::vector<int64_t> shape = runtime::static_shape(spec.shape, x);
    const int64_t n = shape.empty() ? 1 : shape[0];
    auto* input = m.mutable_graph()->mutable_input(static_cast<int>(i));
    input->set_name(x + "#shape");
    auto* type = input->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx_type_of(runtime::DataType::UInt(8)));
    std::string base;
    for (char ch : x) base += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    for (int64_t j = 0; j < n; ++j) {
      auto* dim = type->mutable_shape()->add_dim();
      const runtime::ShapeExpr* value = known && known->size() == static_cast<size_t>(n) ? &(*known)[j] : nullptr;
      if (value && value->is_constant() && value->constant() >= 0) dim->set_dim_value(value->constant());
      else if (value && value->var_name()) dim->set_dim_param(*value->var_name());
      else dim->set_dim_param(base + "_value" + std::to_string(j));
    }
    type->mutable_shape()->add_dim()->set_dim_value(0);
    NDArray indices = NDArray::empty(shape, runtime::kInt64);
    for (int64_t j = 0; j < n; ++j) indices.data_as<int64_t>()[j] = j;
    o.bind[x + "#indices"] = indices;
    auto* v = m.mutable_graph()->add_input();
    v->set_name(x + "#indices");
    v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx_type_of(runtime::kInt64));
    auto node = [&](const std::string& op, std::vector<std::string> in, const std::string& out) {
      auto* nd = prelude.add_node();
      nd->set_op_type(op);
      nd->set_name(x + "#" + op);
      for (const std::string& name : in) nd->add_input(name);
      nd->add_output(out);
      return nd;
    };
    node("Shape", {x + "#shape"}, x + "#dims");
    const bool cast = spec.dtype != runtime::kInt64;
    node("Gather", {x + "#dims", x + "#indices"}, cast ? x + "#int64" : x);
    if (cast) {
      auto* a = node("Cast", {x + "#int64"}, x)->add_attribute();
      a->set_name("to");
      a->set_type(::onnx::AttributeProto::INT);
      a->set_i(onnx_type_of(spec.dtype));
    }
  }

  // Marks the inputs `e` names as bound; false when none is left to bind.
  bool bind_more(const BindingRequired& e, const std::vector<NDArray>& values, std::vector<bool>& bound) const {
    bool more = false;
    for (const std::string& name : e.inputs)
      for (size_t i = 0; i < inputs_.size(); ++i) {
        if (inputs_[i] != name || bound[i]) continue;
        if (values[i].numel() > kMaxBoundElements) {
          fail(e.need, ", and it is computed from '", name, "', which holds ", values[i].numel(),
               " values: a part of a model is built for each value of its inputs it meets only when "
               "those hold at most ",
               kMaxBoundElements);
        }
        bound[i] = more = true;
      }
    return more;
  }

  ::onnx::ModelProto proto_;  // the nodes and outputs; inputs are added per specialization
  std::vector<std::string> inputs_;
  std::vector<std::string> constant_names_;
  std::shared_ptr<const std::map<std::string, NDArray>> constants_;
  std::string base_dir_;
  ConstantEvaluator evaluate_;
};

}  // namespace

std::shared_ptr<const relay_ir::StageSource> onnx_stage(::onnx::ModelProto proto, std::vector<std::string> inputs,
                                                        std::vector<std::string> constant_names,
                                                        std::shared_ptr<const std::map<std::string, NDArray>> constants,
                                                        std::string base_dir, ConstantEvaluator evaluate) {
  return std::make_shared<OnnxStage>(std::move(proto), std::move(inputs), std::move(constant_names),
                                     std::move(constants), std::move(base_dir), std::move(evaluate));
}

}  // namespace tessera::frontend::onnx
