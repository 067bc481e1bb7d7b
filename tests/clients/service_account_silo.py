"""A secured Silo for the service-account and signed-URL modules: not in emulator mode (Security Rules that allow
nothing on the v0 API, an admin key), with service account keys made by `openssl` for the run and registered with
`--service-account`, their `token_uri` pointing at Silo's token endpoint.

Each key file is written twice: Silo reads it at startup (it keeps only the public key); once Silo has announced its
port the file is rewritten with that port in `token_uri` (google-auth's token endpoint) and `gcs_base_url` (where
Rust's object_store sends requests), which only the clients read.
"""
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

from silo_process import request, start_silo

ADMIN_KEY = "silo-clients-admin-key-0123456789"
RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /{all=**} { allow read, write: if false; }
  }
}
"""
SCOPE = "https://www.googleapis.com/auth/devstorage.full_control"


@dataclass
class Account:
    email: str
    key_file: str


@dataclass
class SecuredSilo:
    port: int
    accounts: dict = field(default_factory=dict)

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def admin(self, method, path, value=None):
        """A JSON API call with the admin key; returns (status, JSON or text)."""
        body = json.dumps(value).encode() if value is not None else b""
        status, _, data = request(self.port, method, path, body=body, headers={
            "Authorization": f"Bearer {ADMIN_KEY}", "Content-Type": "application/json"})
        try:
            return status, json.loads(data or b"null")
        except ValueError:
            return status, data.decode(errors="replace")

    def create_bucket(self, name):
        status, body = self.admin("POST", "/storage/v1/b?project=silo-clients", {"name": name})
        assert status in (200, 409), body

    def bind(self, bucket, role, *accounts):
        """Adds an IAM binding of `role` for the accounts to the bucket's policy."""
        status, policy = self.admin("GET", f"/storage/v1/b/{bucket}/iam")
        assert status == 200, policy
        policy["bindings"].append({"role": role, "members": [f"serviceAccount:{a.email}" for a in accounts]})
        status, body = self.admin("PUT", f"/storage/v1/b/{bucket}/iam", {"bindings": policy["bindings"]})
        assert status == 200, body

    def credentials(self, account, scopes=(SCOPE,)):
        from google.oauth2 import service_account
        return service_account.Credentials.from_service_account_file(account.key_file, scopes=list(scopes))

    def obstore(self, account, bucket):
        """An obstore GCSStore with the account's key file: object_store signs its own JWTs with it (AIP-4111)."""
        from obstore.store import GCSStore
        return GCSStore(bucket, service_account_path=account.key_file, client_options={"allow_http": True},
                        retry_config={"max_retries": 0})

    def client(self, account):
        from google.cloud import storage
        return storage.Client(project="silo-clients", credentials=self.credentials(account),
                              client_options={"api_endpoint": self.endpoint})


def make_key(folder, name):
    """A service account key file as Google's console writes one, with a fresh RSA key from openssl."""
    pem = subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
                         check=True, capture_output=True, text=True).stdout
    email = f"{name}@silo-clients.iam.gserviceaccount.com"
    key = {
        "type": "service_account", "project_id": "silo-clients", "private_key_id": os.urandom(20).hex(),
        "private_key": pem, "client_email": email, "client_id": "100000000000000000002",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": "https://oauth2.googleapis.com/token",
        "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
        "client_x509_cert_url": f"https://www.googleapis.com/robot/v1/metadata/x509/{name}",
        "universe_domain": "googleapis.com",
    }
    path = os.path.join(folder, f"{name}.json")
    with open(path, "w") as f:
        json.dump(key, f)
    return Account(email, path)


def start(binary, names=("uploader", "viewer"), unregistered=("outsider",)):
    """Starts the secured Silo; yields it, stops it at the end. `unregistered` keys exist but Silo does not know
    them."""
    folder = tempfile.mkdtemp(prefix="silo-secured-")
    rules = os.path.join(folder, "storage.rules")
    admin_keys = os.path.join(folder, "admin-keys")
    with open(rules, "w") as f:
        f.write(RULES)
    with open(admin_keys, "w") as f:
        f.write(ADMIN_KEY + "\n")
    accounts = {name: make_key(folder, name) for name in (*names, *unregistered)}
    args = ["--data", os.path.join(folder, "data"), "--rules", rules, "--admin-key-file", admin_keys]
    for name in names:
        args += ["--service-account", accounts[name].key_file]
    proc, port, banner = start_silo(binary, *args)
    try:
        assert "service accounts:" in banner, banner
        for account in accounts.values():
            with open(account.key_file) as f:
                key = json.load(f)
            key["token_uri"] = f"http://127.0.0.1:{port}/token"
            key["gcs_base_url"] = f"http://127.0.0.1:{port}"  # where Rust's object_store sends its requests
            with open(account.key_file, "w") as f:
                json.dump(key, f)
        yield SecuredSilo(port, accounts)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)
