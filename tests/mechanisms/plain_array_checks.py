"""Estimator checks a local DP mechanism fails on plain arrays, with the true reason.

Plain arrays carry no user ids, so a mechanism keys row ``i`` by its position and
refuses any array other than the one it was fitted on: row ``i`` of another array
is another user, who must not receive the same noise.
"""

EXPECTED_FAILED_PLAIN_ARRAY = {
    "check_methods_subset_invariance":
        "plain arrays are keyed by position, so transforming a subset of the fitted array "
        "(other rows at each position: other users) raises",
    "check_methods_sample_order_invariance":
        "plain arrays are keyed by position, so transforming a reordering of the fitted "
        "array (other users at each position) raises",
    "check_fit_idempotent":
        "plain arrays are keyed by position, so transforming another array than the one "
        "fitted (its rows are other users) raises",
}
