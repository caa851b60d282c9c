"""The app's chart builders: pure functions ``data -> plotly Figure`` (no Streamlit), one module per page.

``theme`` holds the one visual language (kept blue, removed vermillion, class colours, :func:`theme.style`);
``runs`` draws one AFLite run (Filter and Predictability pages); every other module is named after its page.
"""
