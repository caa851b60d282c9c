import streamlit as st

from aflite_app import ui
from aflite_app.state import DEMO_PAGE, page_state

ui.page_guard()  # a direct link on a fresh server runs inside the app

PAGES = [
    ("pages/demo.py", "Guided demo (10 min)", "Three steps for a class: a shortcut, real words in SNLI, one row."),
    (
        "pages/synthetic.py",
        "Synthetic circles",
        "The paper's Figure 2 live: watch AFLite strip a planted bias, round by round.",
    ),
    ("pages/data.py", "Data", "Pick a bundled dataset, upload your own table and features, or open a CLI run."),
    ("pages/filter.py", "Filter", "Run AFLite on the chosen data; move τ and k and see what is removed."),
    ("pages/predictability.py", "Predictability", "Each row's score p(i), round by round and class by class."),
    ("pages/embedding.py", "Embedding map", "Where the removed rows lie in the representation, and how similar."),
    ("pages/inspect.py", "Inspect", "The instances themselves: filter, read, why each was removed, download."),
    ("pages/compare.py", "Compare runs", "Two runs of the same rows: which rows, classes and words differ."),
    ("pages/baselines.py", "Baselines", "Is AFLite better than a random subset or a one-shot filter?"),
    (
        "pages/evaluation_sets.py",
        "Evaluation sets",
        "Filter an evaluation set with several adversaries (Phang et al.).",
    ),
    ("pages/dynamics.py", "Training dynamics", "Easy / ambiguous / hard examples from how a model learns them."),
]

st.title("AFLite Studio")


def _start_demo() -> None:
    """The guided demo from its first step."""
    page_state(st.session_state, DEMO_PAGE)["step"] = 1


with st.container(border=True):
    start, blurb = st.columns([1, 3], vertical_alignment="center")
    if start.button(
        "Show me in 10 minutes", key="home-demo", type="primary", icon=":material/play_circle:", on_click=_start_demo
    ):
        st.switch_page("pages/demo.py")
    blurb.markdown(
        "A guided demo in three steps for a class: a planted shortcut and what AFLite does to it, the words that "
        "give SNLI's labels away, and one removed row explained."
    )
st.markdown(
    "**Find the examples a dataset's spurious biases make easy, remove them, and see what was removed and "
    "why.** AFLite (Le Bras et al., ICML 2020) asks a simple question of every example: *can a weak model "
    "trained on other examples predict its label from the features alone?* If almost every such model gets it "
    "right, the example is probably solvable through an artefact of how the data was made rather than the task "
    "itself, and AFLite filters it out."
)

left, right = st.columns([3, 2], gap="large")
with left:
    st.subheader("How AFLite works")
    st.markdown(
        """
1. **Start** with the whole dataset *S* and a representation Φ(X) of every example (pre-computed features).
2. **Partition:** draw *m* random splits of *S*; in each, train a simple (linear) model on *t* examples.
3. **Predict out of sample:** each model labels only the examples it did *not* train on.
4. **Score:** an example's *predictability* p(i) is the share of those predictions that were correct.
5. **Remove** up to *k* examples with the highest scores — but only those with p(i) ≥ τ.
6. **Repeat** on what is left, until fewer than *k* examples reach τ or the set is down to the target size *n*.
"""
    )
    st.info(
        "The result is a smaller dataset on which the same simple models do much worse — a harder, less biased "
        "benchmark — plus a record of which examples left in which round and how predictable they were.",
    )
with right:
    st.subheader("Every page, in one line")
    for page, label, line in PAGES:
        st.page_link(page, label=label)
        st.caption(line)
    st.markdown(
        "**Symbols** used on every page: *m* partitions (models per round), *t* training rows per model, "
        "*k* slice size (rows removed per round at most), τ threshold, *n* target size."
    )

st.divider()
st.caption(
    "References: R. Le Bras et al., *Adversarial Filters of Dataset Biases*, ICML 2020 · A. Phang et al., "
    "*Adversarially Constructed Evaluation Sets Are More Challenging, but May Not Be Fair* · A. Cosma et al., "
    "*difficulty levels from training dynamics*. The bundled digits ship inside scikit-learn; everything runs "
    "offline."
)
