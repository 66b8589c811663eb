#!/usr/bin/python3
"""The PyTorch side of recur_onnx_finetune: a small character-level LSTM language model,
pretrained briefly on the Zen of Python (in Python's standard library, so nothing is
downloaded) and exported with torch.onnx.export to examples/char_lm.onnx, which the C++
example loads, fine-tunes on other text and writes back as ONNX.

Run with the system Python, which has torch and onnx (Debian's python3-torch, python3-onnx):
    /usr/bin/python3 examples/make_onnx_char_lm.py

The model: Embedding(96, 16) -> LSTM(16, 32) -> Linear(32, 96), float32, about 11k weights.
The vocabulary is fixed, so that the C++ side encodes text the same way: code 0 is '\\n',
codes 1..95 are the printable ASCII characters ' '..'~'; any other byte is read as ' '.
The ONNX model (opset 14, weights as initializers, constant-folded into ONNX's LSTM layout):
    inputs   codes   int64 [T, B]     character codes
             h0, c0  float [1, B, 32] the LSTM state carried in
    outputs  logits  float [T, B, 96] scores of the next character
             h_n, c_n float [1, B, 32] the state after the last step
T and B are dynamic.
"""
import codecs
import contextlib
import io
import os

import onnx
import torch

VOCABULARY, EMBED, HIDDEN = 96, 16, 32
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "char_lm.onnx")


def encode(text):
    return [0 if c == "\n" else (ord(c) - 31 if " " <= c <= "~" else 1) for c in text]


class CharLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCABULARY, EMBED)
        self.lstm = torch.nn.LSTM(EMBED, HIDDEN)
        self.head = torch.nn.Linear(HIDDEN, VOCABULARY)

    def forward(self, codes, h0, c0):
        out, (h_n, c_n) = self.lstm(self.embed(codes), (h0, c0))
        return self.head(out), h_n, c_n


def pretrain(model, text, steps=300, bptt=32, batch=8):
    codes = torch.tensor(encode(text))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(steps):
        starts = torch.randint(0, len(codes) - bptt - 1, (batch,))
        window = torch.stack([codes[s:s + bptt + 1] for s in starts], dim=1)  # [bptt + 1, batch]
        zeros = torch.zeros(1, batch, HIDDEN)
        logits, _, _ = model(window[:-1], zeros, zeros)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCABULARY), window[1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0 or step == steps - 1:
            print("pretraining step %d: loss %.3f" % (step, loss.item()))


def zen_of_python():
    with contextlib.redirect_stdout(io.StringIO()):  # importing `this` prints it
        import this
    return codecs.decode(this.s, "rot13")


def main():
    torch.manual_seed(0)
    model = CharLM()
    pretrain(model, zen_of_python())
    model.eval()
    codes = torch.tensor(encode("The Zen")).reshape(-1, 1)
    zeros = torch.zeros(1, 1, HIDDEN)
    buffer = io.BytesIO()
    torch.onnx.export(model, (codes, zeros, zeros), buffer, opset_version=14, input_names=["codes", "h0", "c0"],
                      output_names=["logits", "h_n", "c_n"], do_constant_folding=True,
                      dynamic_axes={"codes": {0: "T", 1: "B"}, "h0": {1: "B"}, "c0": {1: "B"},
                                    "logits": {0: "T", 1: "B"}, "h_n": {1: "B"}, "c_n": {1: "B"}})
    onnx.checker.check_model(onnx.load_from_string(buffer.getvalue()))
    with open(OUT, "wb") as f:
        f.write(buffer.getvalue())
    print("wrote", OUT, "(%d bytes)" % len(buffer.getvalue()))


if __name__ == "__main__":
    main()
