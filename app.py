"""AFLite Studio: find and remove the examples a dataset's spurious biases make easy, and see why.

Start with ``streamlit run app.py``. This file sets the page config, the session defaults, the shared sidebar
and the navigation; every page lives in ``pages/`` and computes through ``aflite_app.compute``.
"""

import os

os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), ".numba_cache"))

import streamlit as st

from aflite_app import links, state, ui
from aflite_app.compute import synthetic as synthetic_compute
from aflite_app.compute.datasets import bundled_dataset
from aflite_app.compute.runs import filter_defaults

st.set_page_config(page_title="AFLite Studio", page_icon="🧹", layout="wide")
# once per server process, from its first page on: the Synthetic page's first numbers (and scikit-learn's ~1 s
# import), in a background thread
synthetic_compute.start_warm_up()
state.init_session(st.session_state)

PAGES = {
    "AFLite Studio": [
        st.Page("pages/home.py", title="Home", default=True),
        st.Page("pages/synthetic.py", title="Synthetic circles", url_path="synthetic"),
        st.Page("pages/demo.py", title="Guided demo (10 min)", url_path="demo"),
    ],
    "Filter a dataset": [
        st.Page("pages/data.py", title="Data", url_path="data"),
        st.Page("pages/filter.py", title="Filter", url_path="filter"),
        st.Page("pages/predictability.py", title="Predictability", url_path="predictability"),
        st.Page("pages/embedding.py", title="Embedding map", url_path="embedding"),
        st.Page("pages/inspect.py", title="Inspect", url_path="inspect"),
        st.Page("pages/compare.py", title="Compare runs", url_path="compare"),
        st.Page("pages/baselines.py", title="Baselines", url_path="baselines"),
    ],
    "Compare methods": [
        st.Page("pages/evaluation_sets.py", title="Evaluation sets", url_path="evaluation_sets"),
        st.Page("pages/dynamics.py", title="Training dynamics", url_path="dynamics"),
    ],
}
nav = st.navigation(PAGES)
# a shared link or a reload: the URL's view applies once - the dataset, representation and Filter parameters, and the
# opened page's own view (Inspect's filters, the map's selection, the Synthetic page's τ and k: page_views.PAGE_VIEWS)
notice = links.apply_url(st.session_state, st.query_params, ui.upload_vault(), bundled_dataset, nav.url_path)
ui.sidebar()
if notice:
    st.warning(notice)
dspec, data = ui.current_dataset()  # the Filter parameters of this dataset belong to the view from the start
state.init_filter_widgets(st.session_state, dspec.key, filter_defaults(data.n_rows, data.n_classes))
# the address bar always holds the current view of this page: its own state, plus the dataset and run it shows
view = links.view_params(st.session_state, ui.upload_vault(), nav.url_path, data)
if st.query_params.to_dict() != view:
    st.query_params.from_dict(view)
unlinked = links.unlinked_upload(st.session_state, ui.upload_vault())  # a reload would lose it: say so
if unlinked:
    st.warning(unlinked)
summary = st.sidebar.empty()
ui.run_summary(summary)  # what is known now (kept if the page stops early) ...
nav.run()
ui.run_summary(summary)  # ... and again after the page, so it shows the run the page just made
