#!/usr/bin/env python3
"""Architectures as HuggingFace transformers defines them, exported as users export them
(torch.onnx.export at opset 17 with dynamic_axes over the batch and the sequence or the image's
height and width; decoders with their key/value cache as inputs), each built once by Tessera for
every size (its tiles chosen at the size timed: `size_hints`), checked against ONNX Runtime at three
sizes (its exported module too), then timed against ONNX Runtime on the same model at that size, in
turns, at 2 threads. The weights are random
(small configurations from transformers' config classes: nothing is downloaded). Needs
transformers 4.35.2, the last release for Debian's PyTorch 1.13, which benchmarks/setup.sh
installs into the peers' venv:

    benchmarks/.venv/bin/python benchmarks/huggingface.py [--models bert gpt2_past ...] [--repeat 20]

One RESULT line per model: built_once (one build for every size, exported as a module),
max_rel_err (the largest error relative to ONNX Runtime's output, over the sizes, library and
module), and tessera_ms / onnxruntime_ms at the timed size. Models whose export bakes in the
example's size (Falcon's rotary cache, Swin's window padding, DINOv2's position interpolation,
MobileViT's patches: ONNX Runtime too refuses other sizes) are left out."""
import argparse
import os
import sys
import tempfile

import numpy as np

import common

SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=100)
IMAGE_STAGES = dict(hidden_sizes=[16, 32, 48, 64], depths=[1, 1, 1, 1])


def ids(rng, shape):
    return rng.integers(0, 100, shape).astype("int64")


def text(n, length, rng):
    mask = np.ones((n, length), "int64")
    mask[0, max(1, length // 2):] = 0  # the first sequence padded
    return {"input_ids": ids(rng, (n, length)), "attention_mask": mask}


def image(n, h, w, rng):
    return {"pixel_values": rng.standard_normal((n, 3, h, w)).astype("float32")}


def seq2seq(n, length, target, rng):
    return {**text(n, length, rng), "decoder_input_ids": ids(rng, (n, target))}


def with_past(layers, kv_heads):
    def feeds(n, length, past, rng):
        f = {"input_ids": ids(rng, (n, length)), "attention_mask": np.ones((n, past + length), "int64")}
        f.update({f"past_{i}_{kv}": rng.standard_normal((n, kv_heads, past, 16)).astype("float32")
                  for i in range(layers) for kv in "kv"})
        return f
    return feeds


TEXT_AXES = {"input_ids": {0: "N", 1: "L"}, "attention_mask": {0: "N", 1: "L"}}
IMAGE_AXES = {"pixel_values": {0: "N", 2: "H", 3: "W"}}
SEQ2SEQ_AXES = {**TEXT_AXES, "decoder_input_ids": {0: "N", 1: "T"}}
PAST_AXES = {"input_ids": {0: "N", 1: "L"}, "attention_mask": {0: "N", 1: "S"},
             **{f"past_{i}_{kv}": {0: "N", 2: "P"} for i in range(2) for kv in "kv"}}


def cases(T):
    """name: (model, feeds(*size, rng), dynamic axes, sizes checked, size timed)."""
    def config(cls, **kw):
        return cls(**{**SMALL, **kw})
    text_sizes, text_timed = [(1, 7), (3, 16), (2, 1)], (1, 128)
    image_sizes, image_timed = [(1, 32, 32), (2, 45, 37), (1, 64, 48)], (1, 224, 224)
    past_sizes, past_timed = [(2, 3, 5), (1, 1, 17), (3, 4, 0)], (1, 1, 100)
    return {
        "bert": (T.BertModel(config(T.BertConfig)), text, TEXT_AXES, text_sizes, text_timed),
        "distilbert": (T.DistilBertModel(T.DistilBertConfig(vocab_size=100, dim=64, n_layers=2, n_heads=4,
                                                            hidden_dim=128)), text, TEXT_AXES, text_sizes, text_timed),
        "roberta": (T.RobertaModel(config(T.RobertaConfig, max_position_embeddings=160)), text, TEXT_AXES,
                    text_sizes, text_timed),
        "albert": (T.AlbertModel(config(T.AlbertConfig, embedding_size=32)), text, TEXT_AXES, text_sizes, text_timed),
        "deberta_v2": (T.DebertaV2Model(config(T.DebertaV2Config, max_position_embeddings=160, relative_attention=True,
                                               position_buckets=8, pos_att_type=["p2c", "c2p"])),
                       text, TEXT_AXES, text_sizes, text_timed),
        "gpt2": (T.GPT2LMHeadModel(T.GPT2Config(n_embd=64, n_layer=2, n_head=4, n_positions=160, vocab_size=100,
                                                use_cache=False)), text, TEXT_AXES, text_sizes, text_timed),
        "opt": (T.OPTForCausalLM(config(T.OPTConfig, ffn_dim=128, max_position_embeddings=160, word_embed_proj_dim=64,
                                        use_cache=False)), text, TEXT_AXES, text_sizes, text_timed),
        "bloom": (T.BloomForCausalLM(config(T.BloomConfig, n_layer=2, n_head=4, use_cache=False)), text, TEXT_AXES,
                  text_sizes, text_timed),
        "llama": (T.LlamaForCausalLM(config(T.LlamaConfig, num_key_value_heads=2, max_position_embeddings=160,
                                            use_cache=False)), text, TEXT_AXES, text_sizes, text_timed),
        "gpt_neox": (T.GPTNeoXForCausalLM(config(T.GPTNeoXConfig, max_position_embeddings=160, use_cache=False)),
                     text, TEXT_AXES, text_sizes, text_timed),
        "t5_encoder": (T.T5EncoderModel(T.T5Config(d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4,
                                                   vocab_size=100)), text, TEXT_AXES, text_sizes, text_timed),
        "t5": (T.T5Model(T.T5Config(d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4, vocab_size=100,
                                    decoder_start_token_id=0)),
               seq2seq, SEQ2SEQ_AXES, [(2, 8, 3), (1, 7, 1), (3, 16, 5)], (1, 128, 16)),
        "bart": (T.BartModel(T.BartConfig(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                                          decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128,
                                          vocab_size=100, max_position_embeddings=160)),
                 seq2seq, SEQ2SEQ_AXES, [(2, 8, 3), (1, 7, 1), (3, 16, 5)], (1, 128, 16)),
        "gpt2_past": (T.GPT2LMHeadModel(T.GPT2Config(n_embd=64, n_layer=2, n_head=4, n_positions=160,
                                                     vocab_size=100)),
                      with_past(2, 4), PAST_AXES, past_sizes, past_timed),
        "llama_past": (T.LlamaForCausalLM(config(T.LlamaConfig, num_key_value_heads=2, max_position_embeddings=160)),
                       with_past(2, 2), PAST_AXES, past_sizes, past_timed),
        "vit": (T.ViTModel(T.ViTConfig(**{**SMALL, "vocab_size": None}, image_size=32, patch_size=8)),
                image, {"pixel_values": {0: "N"}}, [(1, 32, 32), (3, 32, 32)], (8, 32, 32)),
        "resnet": (T.ResNetModel(T.ResNetConfig(**IMAGE_STAGES, embedding_size=16)), image, IMAGE_AXES,
                   image_sizes, image_timed),
        "convnext": (T.ConvNextModel(T.ConvNextConfig(**IMAGE_STAGES)), image, IMAGE_AXES, image_sizes, image_timed),
        "segformer": (T.SegformerModel(T.SegformerConfig(**IMAGE_STAGES, decoder_hidden_size=32,
                                                         num_attention_heads=[1, 2, 4, 8])),
                      image, IMAGE_AXES, image_sizes, image_timed),
    }


def exportable(torch, model, names, past_layers):
    """The model as a module of positional inputs (`names`) returning its first output, and with a
    key/value cache the present keys and values after it."""
    class Exported(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model.eval()

        def forward(self, *args):
            if not past_layers:
                return self.model(**dict(zip(names, args)), return_dict=False)[0]
            cache = tuple((args[2 + 2 * i], args[3 + 2 * i]) for i in range(past_layers))
            out = self.model(input_ids=args[0], attention_mask=args[1], past_key_values=cache, use_cache=True,
                             return_dict=False)
            return (out[0],) + tuple(t for layer in out[1] for t in layer)
    return Exported()


def run_model(name, case, args, torch, ort, tessera, folder):
    model, feeds, axes, sizes, timed = case
    rng = np.random.default_rng(0)
    example = feeds(*sizes[0], rng)
    names = list(example)
    path = os.path.join(folder, name + ".onnx")
    past_layers = 2 if name.endswith("_past") else 0
    with torch.no_grad():
        torch.onnx.export(exportable(torch, model, names, past_layers),
                          tuple(torch.from_numpy(v) for v in example.values()), path, input_names=names,
                          dynamic_axes=axes, opset_version=17)
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    session = ort.InferenceSession(path, options)
    timed_feeds = feeds(*timed, rng)
    # The build's tiles chosen at the timed size, as a user who knows the sizes to serve gives them.
    hints = {dim: timed_feeds[name].shape[axis] for name, dims in axes.items() for axis, dim in dims.items()}
    lib = tessera.build(tessera.onnx.load(path), db=False, size_hints=hints)
    built_once = True
    try:
        lib.export(os.path.join(folder, name + ".so"))
        runners = [lib, tessera.load(os.path.join(folder, name + ".so"))]
    except tessera.Error as e:
        print(f"{name}: built per size ({str(e)[:300]})", file=sys.stderr)
        built_once, runners = False, [lib]
    worst = 0.0
    for size in sizes:
        f = feeds(*size, rng)
        want = session.run(None, f)
        for runner in runners:
            for got, w in zip(runner.run([f[n] for n in names]), want):
                if got.shape != w.shape:
                    raise SystemExit(f"{name} at {size}: shape {got.shape}, ONNX Runtime's {w.shape}")
                if w.size:
                    worst = max(worst, float(np.abs(got - w).max() / max(1e-6, np.abs(w).max())))
    inputs = [timed_feeds[n] for n in names]
    times = common.measure_rounds(
        {"tessera": lambda: lib.run(inputs), "onnxruntime": lambda: session.run(None, timed_feeds)}, args.repeat)
    print(common.result_line("huggingface", f"{name} at {timed}", args.threads, times, ["onnxruntime"],
                             extra={"built_once": built_once, "max_rel_err": float(f"{worst:.2e}")}), flush=True)
    return 0 if worst < 1e-4 else 1


def worker(args):
    import onnxruntime as ort
    import torch
    import transformers

    import tessera
    torch.manual_seed(0)
    all_cases = cases(transformers)
    failed = 0
    with tempfile.TemporaryDirectory() as folder:
        for name in args.models or list(all_cases):
            failed |= run_model(name, all_cases[name], args, torch, ort, tessera, folder)
    return failed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="*", help="the models (none named: all)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    return common.run_workers(__file__, [2], ["--models", *(args.models or []), "--repeat", str(args.repeat)])


if __name__ == "__main__":
    sys.exit(main())
