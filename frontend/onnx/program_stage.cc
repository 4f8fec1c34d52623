#include "frontend/onnx/program_stage.h"

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

  relay_ir::Module specialize_symbolic(const std::vector<runtime::BufferSpec>& inputs) const override {
    std::vector<runtime::DataType> dtypes;
    for (const runtime::BufferSpec& in : inputs) dtypes.push_back(in.dtype);
    ::onnx::ModelProto m = at(dtypes);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      auto* shape =
          m.mutable_graph()->mutable_input(static_cast<int>(i))->mutable_type()->mutable_tensor_type()->mutable_shape();
      for (const runtime::ShapeExpr& d : inputs.at(i).shape) {
        auto* dim = shape->add_dim();
        if (d.is_constant()) dim->set_dim_value(d.constant());
        else if (d.var_name()) dim->set_dim_param(*d.var_name());
        // else unnamed: a variable of its own (the stage binds it from the input's shape)
      }
    }
    ImportOptions o;
    o.evaluate = evaluate_;
    o.symbolic = true;
    for (const std::string& c : constant_names_) o.bind[c] = constants_->at(c);
    try {
      return import_model_proto(m, base_dir_, o);
    } catch (const BindingRequired& e) {
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
