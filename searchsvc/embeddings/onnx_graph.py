"""The sentence encoder as an ONNX graph, written from the model's own weights.

The packaged model (all-MiniLM-L6-v2) ships BERT weights in safetensors for PyTorch. Serving
must not need torch, so the network is spelt out here with ONNX operators, the weights read by
`safetensors` into numpy. The graph is BERT's encoder exactly (post-norm, exact GELU, absolute
positions, one token type) followed by the model's pooling: the mean of the token vectors under
the attention mask.

Its dense layers multiply in 8-bit integers (`quantised=True`, what `model.py` prepares), in a
form chosen so that every processor computes the same vectors (issue 38's measurements are in
benchmarks/README.md, "Embeddings on every processor"):

- Each token's activations are quantised on their own (per row, asymmetric u8: the row's
  minimum and maximum span 0..255), never per batch: a text's vector does not depend on the
  texts it is embedded with, and no batch-mate's large activations coarsen a short text's.
- Weights are int8 per output column within +-63 (7 bits). onnxruntime multiplies u8 by s8
  with VNNI or AMX where the processor has them (exact 32-bit sums) and with AVX2's
  vpmaddubsw elsewhere, which adds pairs of products into 16 bits and saturates past 32,767:
  255 x 63 x 2 = 32,130 never does, so both paths give the same integer sums. (Full 8-bit
  weights saturate on AVX2 and moved vectors to a cosine of 0.957 from VNNI's.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17  # LayerNormalization is a standard operator from 17 on
# onnxruntime's own operators (MatMulIntegerToFloat: an integer product scaled to float in one
# kernel, a fifth faster than MatMulInteger, Cast and Mul apart).
MICROSOFT_DOMAIN = "com.microsoft"
# The largest weight magnitude: 7 bits, so that AVX2's 16-bit pair sums cannot saturate.
WEIGHT_LIMIT = 63


class _Graph:
    """Nodes and initialisers of one graph, with fresh names."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, hint: str, value: np.ndarray) -> str:
        name = self.name(hint)
        self.initializers.append(numpy_helper.from_array(np.array(value, order="C"), name))
        return name

    def op(self, op_type: str, inputs: list[str], hint: str | None = None, **attrs) -> str:
        out = self.name(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out


class _RowQuantised:
    """A tensor's rows as u8 (per-row scale and zero point), made once per tensor: the query,
    key and value layers read the same input."""

    def __init__(self, g: _Graph, x: str) -> None:
        zero = g.const("zero_f", np.array(0.0, np.float32))
        high = g.op("Max", [g.op("ReduceMax", [x], axes=[-1], keepdims=1), zero])
        low = g.op("Min", [g.op("ReduceMin", [x], axes=[-1], keepdims=1), zero])
        tiny = g.const("tiny", np.array(1e-8, np.float32))
        spread = g.op("Max", [g.op("Sub", [high, low]), tiny])
        # One step of the row's 256 levels, and minus its zero point (the level of 0.0).
        self.scale = g.op("Div", [spread, g.const("levels", np.array(255.0, np.float32))])
        minus_zero_point = g.op("Round", [g.op("Div", [low, self.scale])])
        shifted = g.op("Sub", [g.op("Div", [x, self.scale]), minus_zero_point])
        self.values = g.op(
            "QuantizeLinear",
            [
                shifted,
                g.const("unit", np.array(1.0, np.float32)),
                g.const("u0", np.array(0, np.uint8)),
            ],
        )
        # What the zero point adds to each product, per unit of a weight column's sum.
        self.offset = g.op("Mul", [minus_zero_point, self.scale])


def quantise_weights(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[in, out] float weights as int8 within +-WEIGHT_LIMIT and one scale per output column."""
    scales = np.maximum(np.abs(weights).max(axis=0), 1e-12) / WEIGHT_LIMIT
    values = np.clip(np.rint(weights / scales), -WEIGHT_LIMIT, WEIGHT_LIMIT).astype(np.int8)
    return values, scales.astype(np.float32)


def _int8_product(g: _Graph, rows: _RowQuantised, weights: np.ndarray, hint: str) -> str:
    """x @ weights in integers: sum_k u8(x)_k w_k, scaled back per row and column, plus the
    zero points' share (the row's offset times the column's weight sum)."""
    values, scales = quantise_weights(weights)
    column_sums = (values.astype(np.float64).sum(axis=0) * scales).astype(np.float32)
    product = g.op(
        "MatMulIntegerToFloat",
        [
            rows.values,
            g.const(hint + ".q", values),
            g.const("unit_a", np.array(1.0, np.float32)),
            g.const(hint + ".s", scales),
            g.const("u0_a", np.array(0, np.uint8)),
            g.const("s0", np.array(0, np.int8)),
        ],
        domain=MICROSOFT_DOMAIN,
    )
    shifted = g.op("Mul", [rows.offset, g.const(hint + ".sums", column_sums)])
    return g.op("Add", [g.op("Mul", [product, rows.scale]), shifted])


def build_encoder(
    weights: Mapping[str, np.ndarray], config: Mapping, quantised: bool = True
) -> onnx.ModelProto:
    """BERT + mean pooling: (input_ids, attention_mask) [batch, tokens] -> [batch, hidden];
    the dense layers in 8-bit integers, or in float32 where `quantised` is false (the reference
    the integer form is measured against)."""
    bert = _Bert(weights, config, quantised)
    x = bert.embeddings()
    bias = bert.attention_bias()
    for layer in range(int(config["num_hidden_layers"])):
        x = bert.layer(x, bias, f"encoder.layer.{layer}")
    bert.mean_pooled(x)
    g = bert.g
    graph = helper.make_graph(
        g.nodes,
        "sentence_encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", bert.hidden])],
        g.initializers,
    )
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid(MICROSOFT_DOMAIN, 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


class _Bert:
    """The graph of BERT's encoder written part by part, in the order the nodes are made."""

    def __init__(self, weights: Mapping[str, np.ndarray], config: Mapping, quantised: bool):
        self.g = _Graph()
        self.weights = weights
        self.quantised = quantised
        self.rows_of: dict[str, _RowQuantised] = {}
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.head_size = self.hidden // self.heads
        self.eps = float(config["layer_norm_eps"])

    def w(self, name: str) -> np.ndarray:
        return self.weights[name].astype(np.float32)

    def dense(self, x: str, prefix: str) -> str:
        g = self.g
        # torch keeps Linear weights as [out, in]; MatMul wants [in, out].
        matrix = np.ascontiguousarray(self.w(prefix + ".weight").T)
        if self.quantised:
            if x not in self.rows_of:
                self.rows_of[x] = _RowQuantised(g, x)
            product = _int8_product(g, self.rows_of[x], matrix, prefix)
        else:
            product = g.op("MatMul", [x, g.const(prefix + ".w", matrix)])
        return g.op("Add", [product, g.const(prefix + ".b", self.w(prefix + ".bias"))])

    def layer_norm(self, x: str, prefix: str) -> str:
        g = self.g
        return g.op(
            "LayerNormalization",
            [
                x,
                g.const(prefix + ".g", self.w(prefix + ".weight")),
                g.const(prefix + ".b", self.w(prefix + ".bias")),
            ],
            axis=-1,
            epsilon=self.eps,
        )

    def embeddings(self) -> str:
        """Word + position + token type 0, normalised; notes the batch and token counts."""
        g, w = self.g, self.w
        shape = g.op("Shape", ["input_ids"])
        self.tokens = g.op("Gather", [shape, g.const("one", np.array(1, np.int64))], axis=0)
        self.batch = g.op("Gather", [shape, g.const("zero", np.array(0, np.int64))], axis=0)
        words = g.op(
            "Gather", [g.const("word_emb", w("embeddings.word_embeddings.weight")), "input_ids"]
        )
        positions = g.op(
            "Slice",
            [
                g.const("pos_emb", w("embeddings.position_embeddings.weight")),
                g.const("start", np.array([0], np.int64)),
                g.op("Unsqueeze", [self.tokens, g.const("axes0", np.array([0], np.int64))]),
                g.const("axis0", np.array([0], np.int64)),
            ],
        )
        type0 = w("embeddings.token_type_embeddings.weight")[0]
        x = g.op("Add", [g.op("Add", [words, positions]), g.const("type0", type0)])
        return self.layer_norm(x, "embeddings.LayerNorm")

    def attention_bias(self) -> str:
        """Padding's large negative attention bias, [batch, 1, 1, tokens]; and the shapes the
        layers split heads into and merge them back from."""
        g = self.g
        self.mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
        bias = g.op(
            "Mul",
            [
                g.op("Sub", [g.const("one_f", np.array(1.0, np.float32)), self.mask]),
                g.const("neg", np.array(-10000.0, np.float32)),
            ],
        )
        bias = g.op("Unsqueeze", [bias, g.const("axes12", np.array([1, 2], np.int64))])
        unsq0 = g.const("axes_0", np.array([0], np.int64))
        self.heads_shape = g.op(
            "Concat",
            [
                g.op("Unsqueeze", [self.batch, unsq0]),
                g.op("Unsqueeze", [self.tokens, unsq0]),
                g.const("heads", np.array([self.heads, self.head_size], np.int64)),
            ],
            axis=0,
        )
        self.merged_shape = g.op(
            "Concat",
            [
                g.op("Unsqueeze", [self.batch, unsq0]),
                g.op("Unsqueeze", [self.tokens, unsq0]),
                g.const("hidden", np.array([self.hidden], np.int64)),
            ],
            axis=0,
        )
        self.scale = g.const("scale", np.array(1.0 / math.sqrt(self.head_size), np.float32))
        return bias

    def layer(self, x: str, bias: str, p: str) -> str:
        """One encoder layer: self-attention, then the feed-forward block, each post-norm."""
        g = self.g

        def split_heads(t: str, perm: list[int]) -> str:
            return g.op("Transpose", [g.op("Reshape", [t, self.heads_shape])], perm=perm)

        q = split_heads(self.dense(x, f"{p}.attention.self.query"), [0, 2, 1, 3])
        k = split_heads(self.dense(x, f"{p}.attention.self.key"), [0, 2, 3, 1])
        v = split_heads(self.dense(x, f"{p}.attention.self.value"), [0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), self.scale]), bias])
        probs = g.op("Softmax", [scores], axis=-1)
        context = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, self.merged_shape])
        attended = self.dense(context, f"{p}.attention.output.dense")
        x = self.layer_norm(g.op("Add", [attended, x]), f"{p}.attention.output.LayerNorm")

        inner = self.dense(x, f"{p}.intermediate.dense")
        # Exact GELU, as BERT's "gelu": x * 0.5 * (1 + erf(x / sqrt(2))).
        erf = g.op(
            "Erf", [g.op("Div", [inner, g.const("sqrt2", np.array(math.sqrt(2.0), np.float32))])]
        )
        gelu = g.op(
            "Mul",
            [
                g.op(
                    "Mul", [inner, g.op("Add", [erf, g.const("one_g", np.array(1.0, np.float32))])]
                ),
                g.const("half", np.array(0.5, np.float32)),
            ],
        )
        out = self.dense(gelu, f"{p}.output.dense")
        return self.layer_norm(g.op("Add", [out, x]), f"{p}.output.LayerNorm")

    def mean_pooled(self, x: str) -> None:
        """The graph's output `embedding`: the mean of the token vectors under the mask."""
        g, mask = self.g, self.mask
        mask3 = g.op("Unsqueeze", [mask, g.const("axes2", np.array([2], np.int64))])
        summed = g.op(
            "ReduceSum",
            [g.op("Mul", [x, mask3]), g.const("axes1", np.array([1], np.int64))],
            keepdims=0,
        )
        counts = g.op("ReduceSum", [mask, g.const("axes1b", np.array([1], np.int64))], keepdims=1)
        counts = g.op("Max", [counts, g.const("min_count", np.array(1e-9, np.float32))])
        g.nodes.append(helper.make_node("Div", [summed, counts], ["embedding"]))
