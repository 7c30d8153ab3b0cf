"""``identity``: the do-nothing control.  Returns the first reference image unchanged, for free.

Every task asks for a change, so a sound judge fails it everywhere; and it
lets the whole pipeline run end to end with no network and no key.
"""

from __future__ import annotations

from ..errors import Refusal
from .base import Generation, GenerationRequest, Provider, sniff_image_ext


class IdentityProvider(Provider):
    route = "identity"

    def generate(self, request: GenerationRequest) -> Generation:
        data = request.references[0].read_bytes()
        ext = sniff_image_ext(data)
        if ext is None:
            raise Refusal(f"{request.references[0]}: not a PNG, JPEG or WebP image")
        return Generation(image=data, ext=ext, cost=request.spec.price, provider_model="identity", seed=None)
