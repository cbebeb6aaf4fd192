"""Great Expectations Data Docs that say what `kraftlake quality` says.

GX judges a validation by one flag: any failed expectation makes it "Failed", whatever the
expectation's severity, and shows each expectation's status only as a web-font icon (an
empty cell where the font cannot load). kraftlake's verdict has three values (`verdict`):
a run whose only failures are warning-severity expectations exits 0 and is "passed with
warnings". These renderer subclasses, plugged in through the Data Docs site configuration
(`site_config`, GX's documented extension point for renderers), label the validation
page's header, every expectation row and the index's status column with that verdict as
text, beside GX's icon.

They also make the "unexpected values" statement under a failed column expectation
coherent: GX divides by the non-null values but names the row count ("1 unexpected values
found. 100% of 33545 total rows."). The derived `dq_*` columns are null where there is
nothing to check (freshness has one value per cluster), so the statement names both; an
expectation can say in its own words what was found with the `found` template of its
`meta` (see `suites`).
"""

from __future__ import annotations

from string import Template
from typing import Any

from great_expectations.render.components import RenderedStringTemplateContent
from great_expectations.render.renderer import (
    SiteIndexPageRenderer,
    ValidationResultsPageRenderer,
)
from great_expectations.render.renderer.content_block import (
    ValidationResultsTableContentBlockRenderer,
)
from great_expectations.render.renderer.site_builder import DefaultSiteIndexBuilder

from .suites import FAILED, PASSED, WARNINGS, verdict

# verdict -> icon (GX's Font Awesome classes)
_VERDICT_ICON = {PASSED: "fas fa-check-circle text-success",
                 WARNINGS: "fas fa-exclamation-circle text-warning",
                 FAILED: "fas fa-times text-danger"}
# status of one expectation row -> icon classes
_ROW_ICON = {"passed": ["fas", "fa-check-circle", "text-success"],
             "warning": ["fas", "fa-exclamation-circle", "text-warning"],
             "failed": ["fas", "fa-times", "text-danger"],
             "exception": ["fas", "fa-exclamation-triangle", "text-warning"]}
STATUS_CLASS = "kraftlake-status"


def _severity(result: Any) -> str:
    """The kraftlake severity of one expectation result (its config's `meta`)."""
    return ((result.expectation_config.meta or {}) if result.expectation_config else {}).get(
        "severity", "error")


def _raised(result: Any) -> bool:
    info = result.exception_info or {}
    if info.get("raised_exception"):
        return True
    return any(isinstance(v, dict) and v.get("raised_exception") for v in info.values())


def row_status(result: Any) -> str:
    """passed, failed (error severity), warning (failed, warning severity) or exception."""
    if _raised(result):
        return "exception"
    if result.success:
        return "passed"
    return "warning" if _severity(result) == "warning" else "failed"


def suite_verdict(validation: Any) -> str:
    """The verdict of one suite's validation result (an `ExpectationSuiteValidationResult`)."""
    return verdict(_severity(r) for r in validation.results if not r.success)


def _status_cell(status: str, original: RenderedStringTemplateContent
                 ) -> RenderedStringTemplateContent:
    """GX's status cell with the status as text after the icon (same parent styling)."""
    return RenderedStringTemplateContent(
        content_block_type="string_template",
        string_template={
            "template": "$icon $status",
            "params": {"icon": "", "status": status},
            "styling": {"params": {
                "icon": {"tag": "i", "classes": _ROW_ICON[status]},
                "status": {"tag": "span", "classes": [STATUS_CLASS, f"{STATUS_CLASS}-{status}"]},
            }},
        },
        styling=original.styling)


def _found(result: Any) -> RenderedStringTemplateContent | None:
    """What a failed column expectation found, with a denominator that means something."""
    res = result.result or {}
    unexpected, rows = res.get("unexpected_count"), res.get("element_count")
    if result.success or not unexpected or rows is None:
        return None
    checked = rows - (res.get("missing_count") or 0)
    cfg = result.expectation_config
    template = (cfg.meta or {}).get("found")
    if template:
        values = {k: f"{v:g}" if isinstance(v, float) else v for k, v in cfg.kwargs.items()
                  if not isinstance(v, dict)}
        text = Template(template).safe_substitute(
            values, unexpected_count=unexpected, checked_count=checked, element_count=rows)
    elif checked == rows:
        return None  # GX's statement is right when every row has a value
    else:
        text = (f"{unexpected} of the {checked} values checked are unexpected "
                f"(the other {rows - checked} of {rows} rows have no value to check).")
    return RenderedStringTemplateContent(
        content_block_type="string_template",
        string_template={"template": "\n\n$found", "params": {"found": text},
                         "tag": "strong", "styling": {"classes": ["text-danger"]}})


def _is_gx_statement(block: Any) -> bool:
    """GX's own "N unexpected values found. P% of E total rows." block."""
    tpl = getattr(block, "string_template", None) or {}
    return "unexpected_percent" in (tpl.get("params") or {}) and "total rows" in tpl.get(
        "template", "")


class ResultsTable(ValidationResultsTableContentBlockRenderer):
    """GX's table of expectation results, with status text and a coherent "found" line."""

    @classmethod
    def _get_content_block_fn(cls, expectation_type: str, expectation_config: Any = None):
        row_fn = super()._get_content_block_fn(expectation_type=expectation_type,
                                               expectation_config=expectation_config)
        assert row_fn is not None  # GX's results table falls back to a generic row

        def row(configuration=None, result=None, runtime_configuration=None, **kwargs):
            """GX's row for one expectation result, with `row_status` as text in its status cell and
            `_found`'s statement in place of GX's "unexpected values" one."""
            out = row_fn(configuration=configuration, result=result,
                         runtime_configuration=runtime_configuration, **kwargs)
            cells = out[0]
            cells[0] = _status_cell(row_status(result), cells[0])
            found = _found(result)
            if found is not None and isinstance(cells[1], list):
                kept = [b for b in cells[1] if not _is_gx_statement(b)]
                cells[1] = [kept[0], found, *kept[1:]] if kept else [found]
            return out

        return row


class ValidationPage(ValidationResultsPageRenderer):
    """GX's validation page whose header says kraftlake's verdict of the suite."""

    def __init__(self, column_section_renderer: dict | None = None) -> None:
        super().__init__(column_section_renderer=column_section_renderer or {
            "class_name": "ValidationResultsColumnSectionRenderer",
            "table_renderer": {"module_name": __name__, "class_name": "ResultsTable"}})

    @classmethod
    def _render_validation_header(cls, validation_results: Any):
        header = super()._render_validation_header(validation_results)
        v = suite_verdict(validation_results)
        params = header.subheader.string_template["params"]
        params["success"] = v.capitalize()
        params["html_success_icon"] = f'<i class="{_VERDICT_ICON[v]}" aria-hidden="true"></i>'
        return header


def _as_verdict(validation_success: Any) -> str:
    """The verdict `IndexBuilder` put in place of GX's flag (the flag if it could not)."""
    if isinstance(validation_success, str):
        return validation_success
    return PASSED if validation_success else FAILED


class IndexPage(SiteIndexPageRenderer):
    """GX's index page; its status column holds the verdict (a string, see `IndexBuilder`)."""

    @classmethod
    def _render_validation_success_cell(cls, validation_success: Any):
        v = _as_verdict(validation_success)
        return RenderedStringTemplateContent(
            content_block_type="string_template",
            string_template={
                "template": "$icon $verdict",
                "params": {"icon": "", "verdict": v},
                "styling": {"params": {
                    "icon": {"tag": "i", "classes": _VERDICT_ICON[v].split()},
                    "verdict": {"tag": "span", "classes": [STATUS_CLASS]}},
                    "classes": ["ge-index-page-table-validation-links-item"]},
            })

    @classmethod
    def _generate_validation_results_link_table(cls, index_links_dict: dict):
        table = super()._generate_validation_results_link_table(index_links_dict)
        for link, row in zip(index_links_dict.get("validations_links", []), table.table_data,
                             strict=True):
            row["_validation_success_text"] = _as_verdict(link["validation_success"])
        return table


class IndexBuilder(DefaultSiteIndexBuilder):
    """GX's index builder, handing the renderer each validation's verdict instead of GX's
    pass/fail flag."""

    def _add_validations_to_index_links(self, index_links_dict, keys) -> None:
        super()._add_validations_to_index_links(index_links_dict, keys)
        for link in index_links_dict.get("validations_links", []):
            validation = self.data_context.get_validation_result(
                expectation_suite_name=link["expectation_suite_name"], run_id=link["run_id"],
                batch_identifier=link["batch_identifier"],
                validation_results_store_name=self.source_stores.get("validations"))
            if getattr(validation, "results", None) is not None:
                link["validation_success"] = suite_verdict(validation)


def site_config() -> dict[str, Any]:
    """The parts of a Data Docs site configuration that plug these classes in."""
    return {
        "site_index_builder": {"module_name": __name__, "class_name": "IndexBuilder",
                               "renderer": {"module_name": __name__,
                                            "class_name": "IndexPage"}},
        "site_section_builders": {"validations": {
            "renderer": {"module_name": __name__, "class_name": "ValidationPage"}}},
    }
