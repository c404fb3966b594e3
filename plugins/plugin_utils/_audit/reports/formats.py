# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The report formats: their names, file names and renderers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.html_report import render_html
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.json_report import render_json
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.junit_report import render_junit
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.markdown_report import render_markdown
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.prometheus_report import render_prometheus

FORMATS = ("json", "md", "junit", "html", "prom")
FILENAMES = {"json": "report.json", "md": "report.md", "junit": "junit.xml", "html": "report.html",
             "prom": "metrics.prom"}
REPORT_RENDERERS = {"json": render_json, "md": render_markdown, "junit": render_junit, "html": render_html,
                    "prom": render_prometheus}
# node_exporter's textfile collector reads the files of its folder that end in .prom
TEXTFILE_NAME = "gpuops_fabric.prom"
