"""config.spreadsheets: the one rule that keeps a CSV cell from being read as a formula."""

from decimal import Decimal

import pytest

from config.spreadsheets import spreadsheet_cell, spreadsheet_record, spreadsheet_row


@pytest.mark.parametrize("text", ["=1+1", "+1", "-2+3", "-1.5", "@SUM(A1)", "\t=1", "\r=1", "\0=1"])
def test_text_that_a_spreadsheet_would_evaluate_gets_a_leading_quote(text):
    assert spreadsheet_cell(text) == "'" + text


@pytest.mark.parametrize("text", ["", "Lender 1", "'=1", " =1", "A1B2", "2024-05-01T10:00:00+00:00"])
def test_other_text_is_unchanged(text):
    assert spreadsheet_cell(text) == text


@pytest.mark.parametrize("number", [-1.5, -0.3, 0, -3, Decimal("-2.50"), True, None])
def test_numbers_and_other_values_are_unchanged(number):
    assert spreadsheet_cell(number) is number


def test_rows_and_records_go_cell_by_cell():
    assert spreadsheet_row(["=x", -1.5, "ok"]) == ["'=x", -1.5, "ok"]
    assert spreadsheet_record({"worker": "@w", "r": -0.3}) == {"worker": "'@w", "r": -0.3}
