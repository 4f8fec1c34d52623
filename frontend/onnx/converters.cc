// The list of converter families and the operators known to be unsupported.
#include "frontend/onnx/converter.h"

namespace tessera::frontend::onnx {

void register_all_converters(ConverterTable& t) {
  register_math_converters(t);
  register_nn_converters(t);
  register_transform_converters(t);
  register_extra_converters(t);
  register_ml_converters(t);
  // Control flow and output sizes that depend on the data (an If whose condition is known at
  // compile time is the importer's own).
  for (const char* op : {"If", "Loop", "Scan", "NonZero", "Unique", "Compress", "NonMaxSuppression"})
    t.program_step(op);
  // Sequences and optionals are values of programs, not tensors.
  for (const char* op :
       {"SequenceConstruct", "SequenceAt", "SequenceEmpty", "SequenceInsert", "SequenceErase", "SequenceLength",
        "SplitToSequence", "ConcatFromSequence", "SequenceMap", "Optional", "OptionalHasElement", "OptionalGetElement"})
    t.program_step(op);
  for (const char* op :
       {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"})
    t.unsupported(op, "random-number operators are not supported");
  for (const char* op : {"StringNormalizer", "TfIdfVectorizer", "RegexFullMatch"})
    t.unsupported(op, "string tensors are not supported");
}

}  // namespace tessera::frontend::onnx
