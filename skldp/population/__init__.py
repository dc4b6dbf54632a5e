"""The privacy boundary: simulated devices, the collections they answer, and the ledger.

Local DP is a protocol between devices and a server (Design page, "Local DP is a
protocol"). A :class:`Population` holds the users' raw data behind one boundary:
every report leaves through it, each device answers a collection (a public
:class:`~skldp.device.CollectionSpec`) once per value of its data, and the :class:`Ledger`
records what each user actually sent. :func:`skldp.accounting.privacy_report`
reads the ledger; a population's ``budget`` caps what its users may spend.

Real devices (:mod:`skldp.device`) answer the spec the server publishes
(:func:`collection_spec`); :func:`read_reports` validates what they send and
:func:`received_graph` turns it into the graph the same pipelines train on.
"""

from ._deploy import collection_spec, mechanism_from_spec
from ._digest import feature_digests, label_digests, list_digests, report_keys
from ._ingest import ReceivedReports, read_reports, received_graph, write_reports
from ._ledger import Ledger, LedgerEntry
from ._population import BudgetExceededError, Population, array_population, default_population
from ._reports import LabelReports
from ._spec import SPEC_VERSION, CollectionSpec, SpecError

__all__ = ["BudgetExceededError", "CollectionSpec", "Ledger", "LedgerEntry", "Population",
           "LabelReports", "ReceivedReports", "SPEC_VERSION", "SpecError", "array_population",
           "collection_spec", "default_population", "feature_digests", "label_digests",
           "list_digests", "mechanism_from_spec", "read_reports", "received_graph",
           "report_keys", "write_reports"]
