#!/usr/bin/env python3
"""Generates the ONNX models that tests, benchmarks and the demo use, from Debian's
python3-torch / python3-torchvision, with deterministic weights (the .onnx files are not
committed). Batch norms get random statistics and affine parameters, since the default
initialization leaves them identities and makes outputs vanish.

    /usr/bin/python3 scripts/make_models.py [--out models/] [--dynamic] [resnet18 mobilenet_v2 transformer ...]
"""
import argparse
import os
import sys

MODELS = {
    # name: (constructor, input shape)
    "resnet18": ("torchvision.models.resnet18", (1, 3, 224, 224)),
    "resnet34": ("torchvision.models.resnet34", (1, 3, 224, 224)),
    "resnet50": ("torchvision.models.resnet50", (1, 3, 224, 224)),
    "mobilenet_v2": ("torchvision.models.mobilenet_v2", (1, 3, 224, 224)),
    "transformer": ("transformer_encoder", (1, 128, 256)),
}
# The input dimensions an exporter leaves symbolic in a model's dynamic variant (name_dynamic.onnx):
# the batch, and a transformer's sequence length; with images, also an image's height and width
# (name_dynamic_hw.onnx, a convolutional network's variant).
DYNAMIC_AXES = {"transformer": {0: "N", 1: "L"}}
IMAGE_AXES = {0: "N", 2: "H", 3: "W"}
SEED = 0


def transformer_encoder():
    import torch

    class Encoder(torch.nn.Module):
        """A small BERT-like encoder: 4 layers, d_model 256, 4 heads, feed-forward 1024."""

        def __init__(self):
            super().__init__()
            layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0,
                                                     activation="gelu", batch_first=True)
            self.encoder = torch.nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)
            self.norm = torch.nn.LayerNorm(256)

        def forward(self, x):
            return self.norm(self.encoder(x))

    return Encoder()


def reinitialize(model, seed):
    """Deterministic weights with non-trivial batch-norm statistics."""
    import torch
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
                fan_in = m.weight[0].numel()
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) * (2.0 / fan_in) ** 0.5)
                if m.bias is not None:
                    m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.01)
            elif isinstance(m, (torch.nn.BatchNorm2d, torch.nn.LayerNorm)):
                if getattr(m, "weight", None) is not None:
                    m.weight.copy_(torch.rand(m.weight.shape, generator=g) * 0.5 + 0.75)
                    m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
                    m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) * 0.5 + 0.75)
            elif isinstance(m, torch.nn.MultiheadAttention):
                m.in_proj_weight.copy_(torch.randn(m.in_proj_weight.shape, generator=g) * 0.05)
                m.in_proj_bias.copy_(torch.randn(m.in_proj_bias.shape, generator=g) * 0.01)
    return model


def build_model(name):
    import importlib
    import torch
    ctor, shape = MODELS[name]
    if ctor == "transformer_encoder":
        model = transformer_encoder()
    else:
        module, fn = ctor.rsplit(".", 1)
        model = getattr(importlib.import_module(module), fn)(weights=None)
    return reinitialize(model.eval(), SEED), shape


def example_input(name, seed=1):
    """The input the tests and benchmarks feed a model (float32, fixed seed)."""
    import numpy as np
    shape = MODELS[name][1]
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def model_path(name, out_dir, dynamic=False, images=False):
    suffix = "_dynamic_hw" if images else "_dynamic" if dynamic else ""
    return os.path.join(out_dir, f"{name}{suffix}.onnx")


def export(name, out_dir, dynamic=False, images=False):
    """Writes name.onnx, or with `dynamic` name_dynamic.onnx, whose input keeps its batch (and a
    transformer's sequence length) symbolic, as exporters write them with dynamic_axes; with
    `images`, name_dynamic_hw.onnx, whose batch, height and width are symbolic."""
    import torch
    import torch_numpy
    os.makedirs(out_dir, exist_ok=True)
    model, shape = build_model(name)
    path = model_path(name, out_dir, dynamic, images)
    x = torch_numpy.tensor(example_input(name))
    axes = {"input": IMAGE_AXES if images else DYNAMIC_AXES.get(name, {0: "N"}), "output": {0: "N"}}
    if not (dynamic or images):
        axes = None
    # Exported with autograd on: under no_grad PyTorch takes fused fast paths for attention
    # that have no ONNX form.
    torch.onnx.export(model, x, path, opset_version=14, input_names=["input"], output_names=["output"],
                      do_constant_folding=True, dynamic_axes=axes)
    with torch.no_grad():
        reference = torch_numpy.array(model(x))
    import numpy as np
    np.save(os.path.join(out_dir, f"{name}.input.npy"), torch_numpy.array(x))
    np.save(os.path.join(out_dir, f"{name}.output.npy"), reference)
    return path


def ensure(name, out_dir, dynamic=False, images=False):
    """The path of model `name` (its dynamic variant with `dynamic`, its variant of symbolic
    image sizes with `images`) in out_dir, exported if it is not there yet."""
    path = model_path(name, out_dir, dynamic, images)
    if not os.path.exists(path) or not os.path.exists(os.path.join(out_dir, f"{name}.output.npy")):
        export(name, out_dir, dynamic, images)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", default=["resnet18", "mobilenet_v2", "transformer"], help=", ".join(sorted(MODELS)))
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
    parser.add_argument("--dynamic", action="store_true", help="the variants with a symbolic batch (and sequence)")
    parser.add_argument("--images", action="store_true", help="the variants with a symbolic batch, height and width")
    args = parser.parse_args()
    for name in args.models:
        if name not in MODELS:
            parser.error(f"unknown model {name} (known: {', '.join(sorted(MODELS))})")
    for name in args.models:
        path = export(name, args.out, args.dynamic, args.images)
        print(f"wrote {os.path.relpath(path)} (input {MODELS[name][1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
