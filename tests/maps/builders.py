"""Topics with a ranked list of propositions, for the map stage's tests: `chain_topic` gives a
topic whose propositions form a chain of concepts (`concept 0 → concept 1 → …`), best first,
so a connected map of any size up to its length can be built in importance order."""

from annotation.models import Topic
from maps import workbench
from maps.models import ConceptMap
from maps.revision import revision_start
from ranking.models import PropositionScore
from tests.factories import PropositionFactory, TopicFactory

WORDS = [
    "apple",
    "banana",
    "cherry",
    "damson",
    "elder",
    "fig",
    "grape",
    "hazel",
    "iris",
    "juniper",
    "kale",
    "lemon",
    "mango",
    "nectar",
    "olive",
    "pear",
    "quince",
    "radish",
    "sage",
    "thyme",
    "ugli",
    "vanilla",
    "walnut",
    "xigua",
    "yam",
    "zucchini",
    "almond",
    "basil",
    "clove",
    "dill",
    "endive",
    "fennel",
]


def ranked_topic(
    *, campaign, triples: list[tuple[str, str, str]], key: str = "alpha", sources: list[str] | None = None
) -> Topic:
    """A topic whose propositions are `triples`, ranked in the order given (Likert means)."""
    topic = TopicFactory(campaign=campaign, key=key, state=Topic.State.DONE)
    for index, (subject, relation, obj) in enumerate(triples):
        proposition = PropositionFactory(
            topic=topic, subject=subject, relation=relation, object=obj, source=(sources or [""] * len(triples))[index]
        )
        PropositionScore.objects.create(proposition=proposition, likert_mean=5 - index / 100, likert_n=5)
    return topic


def word(index: int) -> str:
    """A distinct concept label per index: the words, then the words with a numeral ("apple 2")."""
    base = WORDS[index % len(WORDS)]
    return base if index < len(WORDS) else f"{base} {index // len(WORDS) + 1}"


def chain_triples(length: int) -> list[tuple[str, str, str]]:
    """`length` propositions over `length + 1` concepts, each touching the one before."""
    return [(word(i), f"grows beside {i}", word(i + 1)) for i in range(length)]


def chain_topic(*, campaign, length: int = 30, key: str = "alpha") -> Topic:
    topic = ranked_topic(campaign=campaign, triples=chain_triples(length), key=key)
    revision_start(topic=topic)
    return topic


def map_built(*, topic: Topic, annotator, relations: int) -> ConceptMap:
    """The annotator's map with the first `relations` revised propositions, through the services."""
    concept_map = workbench.map_open(topic=topic, annotator=annotator)
    for proposition in topic.revised_propositions.order_by("position")[:relations]:
        concept_map = workbench.proposition_include(
            map_id=concept_map.pk, user=annotator, version=concept_map.version, proposition_id=proposition.pk
        )
    return concept_map
