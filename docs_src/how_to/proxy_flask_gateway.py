"""A Flask site whose MCP endpoint is also a gateway to the billing service: its staff see and
call the billing tools, each with their own billing token; other users see neither.

    BILLING_URL=https://billing.example/mcp flask --app proxy_flask_gateway run
"""

import os
from dataclasses import dataclass

from flask import Flask
from flask_login import LoginManager, UserMixin

from minimcp import create_proxy
from minimcp.flask import MCP

app = Flask(__name__)
app.secret_key = os.environ.get("SECRET_KEY", "change me")
login = LoginManager(app)


@dataclass
class User(UserMixin):
    id: str
    name: str
    is_staff: bool
    billing_token: str | None


USERS = {"1": User("1", "ann", True, "ann-at-billing"), "2": User("2", "ben", False, None)}


@login.user_loader
def load_user(user_id: str) -> User | None:
    return USERS.get(user_id)


def billing_credential(user: User | None) -> dict[str, str] | None:
    """Each user reaches billing as themselves; never with this site's cookie or token."""
    if user is None or user.billing_token is None:
        return None
    return {"Authorization": f"Bearer {user.billing_token}"}


mcp = MCP(app)
billing = create_proxy(os.environ["BILLING_URL"], credentials=billing_credential)
mcp.mount(billing, namespace="billing")  # its tools are billing_<name>
mcp.allow("billing_*", allowed=lambda user: user.is_staff, requirement="staff status")
