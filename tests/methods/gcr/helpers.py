"""Shared pieces of the GCR tests: the real SmolLM2 tokenizer and a tiny random-weight Llama over it.

The tiny model is a real transformers model (2 layers, hidden size 32, seeded weights) with the real
tokenizer: it exercises the decoder's beam search, trie constraint and answer pass exactly, in well
under a second, without the cost of the 135M model. Its outputs are arbitrary, which is the point:
without the trie its paths are not in the KG, with it they always are.
"""

from __future__ import annotations

import functools

from kg_agents.llm.local_model import load_local_tokenizer
from kg_agents.methods.gcr.decoding import DecodedPath


@functools.lru_cache(maxsize=1)
def smollm_tokenizer():
    return load_local_tokenizer()


@functools.lru_cache(maxsize=1)
def tiny_model():
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = smollm_tokenizer()
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    model = LlamaForCausalLM(cfg).eval()
    return model, tok


def tiny_decoder(**kwargs):
    from kg_agents.methods.gcr.local_decoder import LocalConstrainedDecoder

    model, tok = tiny_model()
    return LocalConstrainedDecoder(model, tok, **kwargs)


class RecordingDecoder:
    """A scripted decoder: two fixed KG paths of ``Splash``, best first; records every call's K."""

    def __init__(self, tokenizer, out=None):
        self.tokenizer = tokenizer
        self.seen: list[int] = []
        self.tries: list = []
        self.last_stats = {"prompt_tokens": 7, "output_tokens": 5, "seconds": 0.0}
        self.out = (
            list(out)
            if out is not None
            else [
                DecodedPath("", "Splash -> directed_by -> Ron Howard", -0.1, "Ron Howard", {"in_trie": True}),
                DecodedPath(
                    "", "Splash -> starred_actors -> Tom Hanks", -0.2, "Tom Hanks", {"in_trie": True}
                ),
            ]
        )

    def generate(self, messages, trie, num_beams):
        self.seen.append(num_beams)
        self.tries.append(trie)
        return self.out[:num_beams]
