"""dedup, cluster and join on the embedded model's embeddings (SmolLM2, a chat model mean-pooled by llama.cpp):
each call warns that these are no embedding vectors; the planted support-ticket rewordings of
tests/dataframes/test_dedup.py are found at a high threshold, and unrelated reviews are no longer one group."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aiforge import ChatAgent
from aiforge.core.errors import ChatModelVectorsWarning, EmbeddedModelWarning
from aiforge.providers.local import weights
from aiforge.providers.local.weights import find_default_weights
from aiforge.semantic.embeddings import embed_texts
from tests.dataframes.test_dedup import FRAME

if not weights.xllamacpp_installed() or find_default_weights() is None:
    pytest.skip(f"the embedded model is not installed: {weights.INSTALL_HINT}", allow_module_level=True)

pytestmark = pytest.mark.embedded

NOT_EMBEDDINGS = "SmolLM2-135M-Instruct is a chat model, and its vectors are not trained embedding vectors"
REVIEWS = [  # 22 reviews of different things, none a duplicate of another
    "Great kettle, boils fast.", "Broke after two days, awful.",
    "The headphones sound muddy and the left ear cuts out.", "Delivery was a week late and the box was crushed.",
    "Best blender I have owned, crushes ice in seconds.", "The charger gets dangerously hot after ten minutes.",
    "Comfortable backpack, lots of pockets, survived a hiking trip.", "The lamp flickers constantly, returned it.",
    "Toaster burns one side and leaves the other pale.", "Keyboard keys feel crisp, typing is a pleasure.",
    "Speaker is loud but the bass distorts at high volume.", "Vacuum lost suction within a month.",
    "The mouse scroll wheel squeaks.", "Smartwatch battery lasts four days, very happy.",
    "Customer service never answered my emails.", "Cheap plastic, the lid snapped off on day one.",
    "Looks exactly like the photos, nice colour.", "Instructions were in German only.",
    "Arrived early and well packed, thank you!", "Too heavy to carry around all day.",
    "My kids love it, we use it every weekend.", "Stopped charging after the last firmware update.",
]


def test_the_embedded_models_embeddings_find_the_close_rewordings_and_no_false_pair() -> None:
    # This model's vectors all sit close (distinct tickets 0.68-0.92 apart), so only a high threshold keeps them
    # apart; the rewordings that change a word or two are at 0.96-1.0. "Password reset email never arrived" is
    # 0.89 from its original and 0.91 from the two-factor ticket: left alone, as confirm= would have to decide.
    with pytest.warns(ChatModelVectorsWarning, match=NOT_EMBEDDINGS) as caught:
        ids = FRAME.aiforge.dedup("ticket", threshold=0.95, provider="local", EMBEDDING_PROVIDER="local")
    assert len(caught) == 1
    assert ids[ids != ids.index].to_dict() == {
        "T10": "T00", "T11": "T00", "T12": "T02", "T14": "T04", "T15": "T07",
    }
    report = ids.attrs["aiforge"]
    assert report.embedding.model == "SmolLM2-135M-Instruct" and report.total_cost == 0.0 and report.asked == 0


def test_unrelated_reviews_are_not_chained_into_one_group() -> None:
    # Their pairs score 0.70-0.93 here: at 0.9 union-find chained 21 of the 22 into one group. Now each review is
    # within the threshold of the review its group is named by, and most stand alone.
    agent = ChatAgent(provider="local", memory="none", EMBEDDING_PROVIDER="local")
    reviews = pd.Series(REVIEWS)
    with pytest.warns(ChatModelVectorsWarning, match=NOT_EMBEDDINGS):
        ids = reviews.aiforge.dedup(0.9, agent=agent, cache="memory")
    vectors = embed_texts(agent, REVIEWS, cache="memory")
    reached = np.einsum("ij,ij->i", vectors, vectors[ids.to_numpy()])
    assert (reached >= 0.9 - 1e-6).all()
    assert ids.nunique() >= 10 and ids.value_counts().max() <= len(REVIEWS) // 2


def test_cluster_and_a_join_that_embeds_warn_too() -> None:
    agent = ChatAgent(provider="local", memory="none", EMBEDDING_PROVIDER="local")
    assert agent.provider.embeds_chat_model
    with pytest.warns(ChatModelVectorsWarning, match="^cluster: " + NOT_EMBEDDINGS) as caught:
        FRAME.aiforge.cluster("ticket", 3, agent=agent)
    assert len(caught) == 1
    products = pd.DataFrame({"name": [f"product {n}" for n in range(31)]})  # over 30: the join embeds
    with pytest.warns(EmbeddedModelWarning) as caught:  # the yes/no batch may warn too, once per process
        FRAME.head(2).aiforge.join(products, "{left.ticket} / {right.name}?", agent=agent, candidates=1)
    said = [str(w.message) for w in caught if w.category is ChatModelVectorsWarning]
    assert len(said) == 1 and said[0].startswith("join: " + NOT_EMBEDDINGS)
