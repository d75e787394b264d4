"""Elicitation outcomes and the form-schema rule.

The public path; the code lives in ``minimcp.server.app.elicitation``."""

from minimcp.server.app.elicitation import (
    AcceptedElicitation,
    AcceptedUrlElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    elicit_url,
    elicit_with_validation,
    ElicitationResult,
    form_schema,
    outcome_of,
    render_elicitation_schema,
    UnusableAnswer,
    UrlElicitationResult,
)

__all__ = ["AcceptedElicitation", "AcceptedUrlElicitation", "CancelledElicitation", "DeclinedElicitation", "elicit_url", "elicit_with_validation", "ElicitationResult", "form_schema", "outcome_of", "render_elicitation_schema", "UnusableAnswer", "UrlElicitationResult"]
