"""plotly, imported in one place (as Optuna's ``visualization/_plotly_imports``): the views, the
report and the widgets take ``go``, ``pio`` and the colour helpers from here.

``import msviz`` does not import the views, so the package root and the engine do not pay for
plotly; a view module does (about 40 ms), once.
"""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio
from plotly.colors import qualitative, sample_colorscale  # not plotly.express: 0.3 s to import

__all__ = ["go", "pio", "qualitative", "sample_colorscale"]
