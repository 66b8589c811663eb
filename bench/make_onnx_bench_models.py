#!/usr/bin/python3
"""The ONNX models of recur_bench_onnx (bench/bench_onnx.cpp), at the RNN suite's M
configuration (rnn_suite.hpp: batch 32, input 64, hidden 256, 100 steps), float32:

  bench/data/lstm_M.onnx         PyTorch's torch.onnx.export of nn.LSTM(64, 256), opset 14,
                                 with its weights as graph inputs (export_params=False:
                                 weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, in
                                 PyTorch's layout; the export reorders them for ONNX's LSTM
                                 node), so the file holds no weights: the benchmark feeds the
                                 suite's. Input `input` [100, 32, 64], output `output`
                                 [100, 32, 256] (and h_n, c_n).
  bench/data/elman_scan_M.onnx   an ONNX Scan (opset 16) of the Elman step
                                 h' = tanh(x_t W + h U + b), W, U, b graph inputs the body
                                 reads from the outer scope; inputs h0 [32, 256], xs
                                 [100, 32, 64], W [64, 256], U [256, 256], b [256]; outputs
                                 hT and ys [100, 32, 256].

Run with the system Python, which has torch and onnx:
    /usr/bin/python3 bench/make_onnx_bench_models.py
"""
import io
import os

import onnx
from onnx import TensorProto, helper
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
BATCH, INPUT, HIDDEN, STEPS = 32, 64, 256, 100


def lstm_model():
    layer = torch.nn.LSTM(INPUT, HIDDEN)
    names = [name for name, _ in layer.named_parameters()]
    buffer = io.BytesIO()
    torch.onnx.export(layer, (torch.zeros(STEPS, BATCH, INPUT),), buffer, opset_version=14, export_params=False,
                      do_constant_folding=False, input_names=["input"] + names,
                      output_names=["output", "h_n", "c_n"])
    return onnx.load_from_string(buffer.getvalue())


def elman_scan_model():
    f = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("MatMul", ["x_t", "W"], ["xw"]),
         helper.make_node("MatMul", ["h", "U"], ["hu"]),
         helper.make_node("Add", ["xw", "hu"], ["pre"]),
         helper.make_node("Add", ["pre", "b"], ["biased"]),
         helper.make_node("Tanh", ["biased"], ["h_next"]),
         helper.make_node("Identity", ["h_next"], ["y_t"])],
        "elman_step",
        [helper.make_tensor_value_info("h", f, [BATCH, HIDDEN]), helper.make_tensor_value_info("x_t", f, [BATCH, INPUT])],
        [helper.make_tensor_value_info("h_next", f, [BATCH, HIDDEN]),
         helper.make_tensor_value_info("y_t", f, [BATCH, HIDDEN])])
    scan = helper.make_node("Scan", ["h0", "xs"], ["hT", "ys"], body=body, num_scan_inputs=1)
    graph = helper.make_graph(
        [scan], "elman_scan",
        [helper.make_tensor_value_info("h0", f, [BATCH, HIDDEN]),
         helper.make_tensor_value_info("xs", f, [STEPS, BATCH, INPUT]),
         helper.make_tensor_value_info("W", f, [INPUT, HIDDEN]),
         helper.make_tensor_value_info("U", f, [HIDDEN, HIDDEN]),
         helper.make_tensor_value_info("b", f, [HIDDEN])],
        [helper.make_tensor_value_info("hT", f, [BATCH, HIDDEN]),
         helper.make_tensor_value_info("ys", f, [STEPS, BATCH, HIDDEN])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)], producer_name="recur bench")


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, model in (("lstm_M.onnx", lstm_model()), ("elman_scan_M.onnx", elman_scan_model())):
        onnx.checker.check_model(model, full_check=True)
        path = os.path.join(OUT, name)
        onnx.save(model, path)
        print("wrote", path, "(%d bytes)" % os.path.getsize(path))


if __name__ == "__main__":
    main()
