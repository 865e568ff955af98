"""Fake secrets of every format Postrun knows, each in a line it would sit in, and benign
strings that look like them (hashes, ids, base64, lockfiles, ordinary code).

The formats follow detect-secrets' plugins and gitleaks' rules; every value is made here
from a seeded hash (``fake``), so no token sits whole in the source and none is real.
"""

from __future__ import annotations

import base64
import hashlib
from typing import NamedTuple

UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
LOWER = UPPER.lower()
DIGITS = "0123456789"
HEX = "0123456789abcdef"
ALNUM = UPPER + LOWER + DIGITS
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"


def fake(seed: str, length: int, alphabet: str = ALNUM) -> str:
    """``length`` characters of ``alphabet``, the same for the same seed."""
    out: list[str] = []
    counter = 0
    while len(out) < length:
        block = hashlib.sha256(f"{seed}:{counter}".encode()).digest()
        out.extend(alphabet[byte % len(alphabet)] for byte in block)
        counter += 1
    return "".join(out[:length])


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


class SecretCase(NamedTuple):
    name: str  # the format
    text: str  # a line of output, a file read or a command that holds it
    secret: str  # what a mask must cover, whole


def _case(name: str, template: str, secret: str) -> SecretCase:
    return SecretCase(name, template.format(s=secret), secret)


_PEM = "\n".join(fake("pem", 64 * 6, B64)[i : i + 64] for i in range(0, 64 * 6, 64))
_JWT = ".".join(
    (
        _b64url(b'{"alg":"HS256","typ":"JWT"}'),
        _b64url(b'{"sub":"1234567890","name":"dev","iat":1516239022}'),
        fake("jwt-sig", 43, URLSAFE),
    )
)
_KUBE_KEY = base64.b64encode(b"-----BEGIN RSA PRIVATE KEY-----\n" + fake("kube", 120, B64).encode()).decode()
_DOCKER_AUTH = base64.b64encode(b"dev:" + fake("docker", 16).encode()).decode()
_DJANGO = "django-insecure-" + fake("django", 50, LOWER + DIGITS + "!@#$%^&*(-_=+)")

SECRETS: list[SecretCase] = [
    _case("AWS access key id", "aws_access_key_id = {s}", "AKIA" + fake("aws-id", 16, UPPER + DIGITS)),
    _case(
        "AWS key id in a branch name", "git checkout -b fix-{s}-leak", "AKIA" + fake("aws-branch", 16, UPPER + DIGITS)
    ),
    _case(
        "AWS temporary key id (JSON)",
        '{{"AccessKeyId": "{s}", "Expiration": "2026-01-01"}}',
        "ASIA" + fake("asia", 16, UPPER + DIGITS),
    ),
    _case("AWS secret key, quoted", 'aws_secret_access_key = "{s}"', fake("aws-secret", 40, ALNUM + "/+")),
    _case("AWS secret key, env", "export AWS_SECRET_ACCESS_KEY={s}", fake("aws-env", 40, ALNUM + "/+")),
    _case("GitHub classic token", "token: {s}", "ghp_" + fake("ghp", 36)),
    _case("GitHub OAuth token", "oauth_token: {s}", "gho_" + fake("gho", 36)),
    _case("GitHub fine-grained token", "GH_TOKEN={s}", "github_pat_" + fake("pat1", 22) + "_" + fake("pat2", 59)),
    _case(
        "GitHub app token in a remote",
        "remote: https://x-access-token:{s}@github.com/o/r.git",
        "ghs_" + fake("ghs", 36),
    ),
    _case("GitLab personal token", "glab auth login --token {s}", "glpat-" + fake("glpat", 20, URLSAFE)),
    _case("GitLab runner token", "runner token {s} registered", "glrt-" + fake("glrt", 24, URLSAFE)),
    _case(
        "Slack bot token",
        "SLACK {s}",
        "xoxb-" + fake("xoxb1", 12, DIGITS) + "-" + fake("xoxb2", 13, DIGITS) + "-" + fake("xoxb3", 24, LOWER + DIGITS),
    ),
    _case(
        "Slack webhook",
        "curl -X POST {s}",
        "https://hooks.slack.com/services/T"
        + fake("t", 8, UPPER + DIGITS)
        + "/B"
        + fake("b", 8, UPPER + DIGITS)
        + "/"
        + fake("w", 24),
    ),
    _case(
        "Slack app token",
        "SLACK_APP_TOKEN is {s}",
        "xapp-1-A" + fake("xapp", 10, UPPER + DIGITS) + "-" + fake("xapp2", 13, DIGITS) + "-" + fake("xapp3", 64, HEX),
    ),
    _case("Stripe live key", "Stripe.api_key = '{s}'", "sk_live_" + fake("stripe24", 24)),
    _case("Stripe live key, 107 characters", "STRIPE_SECRET={s}", "sk_live_" + fake("stripe99", 99)),
    _case("Stripe restricted key, 107 characters", "key: {s}", "rk_live_" + fake("rk99", 99)),
    _case("Stripe test key", 'stripe.api_key = "{s}"', "sk_test_" + fake("sktest", 24)),
    _case("Stripe webhook secret", "endpoint secret {s}", "whsec_" + fake("whsec", 32)),
    _case(
        "OpenAI project key",
        "using key {s} now",
        "sk-proj-" + fake("proj", 74, URLSAFE) + "T3BlbkFJ" + fake("proj2", 74, URLSAFE),
    ),
    _case("OpenAI legacy key", "openai.api_key = {s}", "sk-" + fake("oai1", 20) + "T3BlbkFJ" + fake("oai2", 20)),
    _case("Anthropic key", "ANTHROPIC_KEY is {s}", "sk-ant-api03-" + fake("ant", 93, URLSAFE) + "AA"),
    _case("Google API key", "maps key={s}&q=1", "AIza" + fake("aiza", 35, URLSAFE)),
    _case("Google OAuth client secret", '"client_secret":"{s}"', "GOCSPX-" + fake("gocspx", 28, URLSAFE)),
    _case(
        "GCP service account key (JSON)",
        '{{"type": "service_account", "private_key": "{s}\\n"}}',
        "-----BEGIN PRIVATE KEY-----\\n" + _PEM.replace("\n", "\\n") + "\\n-----END PRIVATE KEY-----",
    ),
    _case("npm token", "npm token create -> {s}", "npm_" + fake("npm", 36)),
    _case(".npmrc auth token", "//registry.npmjs.org/:_authToken={s}", "npm_" + fake("npmrc", 36)),
    _case(
        ".npmrc legacy auth token",
        "//registry.npmjs.org/:_authToken={s}",
        "-".join(fake(f"npmlegacy{n}", size, HEX) for n, size in enumerate((8, 4, 4, 4, 12))),
    ),
    _case("PyPI token", "password = {s}", "pypi-AgEIcHlwaS5vcmc" + fake("pypi", 80, URLSAFE)),
    _case("Hugging Face token", "HF login {s}", "hf_" + fake("hf", 34)),
    _case("SendGrid key", "SENDGRID {s}", "SG." + fake("sg1", 22, URLSAFE) + "." + fake("sg2", 43, URLSAFE)),
    _case("Square OAuth secret", "square {s}", "sq0csp-" + fake("sq", 43, URLSAFE)),
    _case(
        "Azure storage account key",
        "DefaultEndpointsProtocol=https;AccountName=x;{s};EndpointSuffix=core.windows.net",
        "AccountKey=" + fake("azure", 86, B64) + "==",
    ),
    _case(
        "Azure SAS signature",
        "https://acct.blob.core.windows.net/c/f?sv=2022-11-02&ss=b&sp=r&se=2026-01-01&sig={s}",
        fake("sas", 40, ALNUM) + "%3D",
    ),
    _case(
        "Azure Service Bus key",
        "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={s}",
        fake("sb", 43, B64) + "=",
    ),
    _case("Twilio API key", "TWILIO {s}", "SK" + fake("twsk", 32, HEX)),
    _case("Twilio account SID", "account {s}", "AC" + fake("twac", 32, HEX)),
    _case(
        "Telegram bot token in a URL",
        "curl https://api.telegram.org/bot{s}/sendMessage",
        fake("tgid", 10, DIGITS) + ":AA" + fake("tg", 33, URLSAFE),
    ),
    _case("Telegram bot token", "telegram bot {s}", fake("tgid2", 9, DIGITS) + ":AA" + fake("tg2", 33, URLSAFE)),
    _case(
        "Discord bot token",
        "discord client.run({s})",
        "M" + fake("dc1", 23, URLSAFE) + "." + fake("dc2", 6, URLSAFE) + "." + fake("dc3", 38, URLSAFE),
    ),
    _case("DigitalOcean personal token", "doctl auth init -t {s}", "dop_v1_" + fake("dop", 64, HEX)),
    _case("DigitalOcean OAuth token", "Bearer-less {s}", "doo_v1_" + fake("doo", 64, HEX)),
    _case("Mailchimp key", "mailchimp {s}", fake("mc", 32, HEX) + "-us12"),
    _case("Artifactory API key", "X-JFrog-Art-Api: {s}", "AKC" + fake("akc", 70)),
    _case("IBM Cloud IAM key", "ibm_cloud_api_key: {s}", fake("ibm", 44, URLSAFE)),
    _case("Cloudant password in a URL", "https://acct:{s}@acct.cloudant.com", fake("cloudant", 64, HEX)),
    _case("Shopify access token", "X-Shopify-Access-Token {s}", "shpat_" + fake("shpat", 32, HEX)),
    _case("Vault token", "vault login {s}", "hvs." + fake("hvs", 95, URLSAFE)),
    _case("Databricks token", "databricks configure --token {s}", "dapi" + fake("dapi", 32, HEX)),
    _case("Groq key", "groq {s}", "gsk_" + fake("gsk", 52)),
    _case("Postman key", "postman {s}", "PMAK-" + fake("pmak1", 24, HEX) + "-" + fake("pmak2", 34, HEX)),
    _case("age secret key", "# created\n{s}", "AGE-SECRET-KEY-1" + fake("age", 58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")),
    _case("Grafana service account token", "grafana {s}", "glsa_" + fake("glsa", 32) + "_" + fake("glsa2", 8, HEX)),
    _case(
        "RSA private key",
        "$ cat id_rsa\n{s}\n",
        f"-----BEGIN RSA PRIVATE KEY-----\n{_PEM}\n-----END RSA PRIVATE KEY-----",
    ),
    _case(
        "OpenSSH private key", "{s}", f"-----BEGIN OPENSSH PRIVATE KEY-----\n{_PEM}\n-----END OPENSSH PRIVATE KEY-----"
    ),
    _case("EC private key", "key.pem:\n{s}", f"-----BEGIN EC PRIVATE KEY-----\n{_PEM}\n-----END EC PRIVATE KEY-----"),
    _case(
        "PGP private key",
        "{s}",
        f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{_PEM}\n-----END PGP PRIVATE KEY BLOCK-----",
    ),
    _case("JWT", "cookie session={s}; Path=/", _JWT),
    _case("kubeconfig client-key-data", "users:\n- name: dev\n  user:\n    client-key-data: {s}\n", _KUBE_KEY),
    _case("Postgres URL password", "DATABASE_URL=postgres://app:{s}@db.internal:5432/app", "Hunt3r" + fake("pg", 6)),
    _case("URL password with & and !", "mysql://root:{s}@localhost:3306/shop", "S3cr!t&" + fake("my", 6) + "!"),
    _case("Redis URL with only a password", "REDIS_URL=redis://:{s}@cache:6379/0", "R3dis" + fake("redis", 10)),
    _case("AMQP URL password with $", "amqp://guest:{s}@mq:5672/", "pa$$" + fake("amqp", 8) + "9"),
    _case("MongoDB SRV password", "mongodb+srv://admin:{s}@cluster0.x.mongodb.net/db", fake("mongo", 16)),
    _case("DB_PASSWORD", "DB_PASSWORD={s}", "Pa55w0rd-" + fake("dbpw", 6)),
    _case("DB_PASS", "DB_PASS={s}", "Xk9#" + fake("dbpass", 8) + "!v"),
    _case("MYSQL_PWD", "MYSQL_PWD={s} mysql -u root shop", fake("mysqlpwd", 12) + "7"),
    _case("ENCRYPTION_KEY", "ENCRYPTION_KEY={s}", base64.b64encode(fake("enc", 32).encode()).decode()),
    _case("Django secret key", "SECRET_KEY = '{s}'", _DJANGO),
    _case("Rails secret key base", "SECRET_KEY_BASE={s}", fake("rails", 128, HEX)),
    _case("Laravel app key", "APP_KEY=base64:{s}", base64.b64encode(fake("laravel", 32).encode()).decode()),
    _case("compose password", '      POSTGRES_PASSWORD: "{s}"', "c0mp0se-" + fake("compose", 10)),
    _case("JSON client secret", '{{"client_id": "app", "client_secret": "{s}"}}', fake("jsonsecret", 32)),
    _case("exported API key", 'export API_KEY="{s}"', fake("exported", 32, HEX)),
    _case("password option", "mysqldump --user=root --password={s} shop", "Dump" + fake("dump", 8) + "#1"),
    _case("PGPASSWORD", "PGPASSWORD={s} psql -h db -U app", "pg" + fake("pgpassword", 14)),
    _case("curl -u", "curl -u deploy:{s} https://ci.example.com/api", "D3pl0y!" + fake("curl", 8)),
    _case("docker login -p", "docker login -u ci -p {s} registry.example.com", "Dk9" + fake("dockerlogin", 13)),
    _case("helm registry login", "helm registry login r.example.com --username ci --password {s}", fake("helm", 20)),
    _case("sshpass -p", "sshpass -p '{s}' ssh deploy@10.0.0.5", "Ss#" + fake("sshpass", 10)),
    _case("mysql -pX", "mysql -h db -uroot -p{s} shop < dump.sql", "My" + fake("mysqlp", 12)),
    _case("redis-cli -a", "redis-cli -h cache -a {s} ping", fake("redis", 24)),
    _case("mongosh -p", 'mongosh "mongodb://db:27017" -u admin -p "{s}"', "Mg" + fake("mongo", 14)),
    _case("sqlcmd -P", "sqlcmd -S db -U sa -P {s} -Q 'select 1'", "Sq!" + fake("sqlcmd", 12)),
    _case("ldapsearch -w", "ldapsearch -x -D cn=admin,dc=example,dc=org -w {s} -b dc=example,dc=org", fake("ldap", 16)),
    _case("openssl pass:", "openssl enc -aes-256-cbc -pass pass:{s} -in a -out b", "Os" + fake("openssl", 14)),
    _case("smbclient -U user%pass", "smbclient //fs/share -U admin%{s}", "Sm" + fake("smb", 14)),
    _case("htpasswd -b", "htpasswd -bc /etc/nginx/.htpasswd admin {s}", "Ht" + fake("htpasswd", 14)),
    _case("Authorization header", "> Authorization: Bearer {s}", fake("bearer", 40, URLSAFE + ".")),
    _case("API key header", 'curl -H "X-API-Key: {s}" https://api.example.com', fake("xapikey", 32)),
    _case("docker config auth", '{{"auths": {{"registry.example.com": {{"auth": "{s}"}}}}}}', _DOCKER_AUTH),
    _case(".netrc line", "machine api.example.com login dev password {s}", "N3trc" + fake("netrc", 10)),
    _case(".netrc over lines", "machine git.example.com\n  login dev\n  password {s}\n", fake("netrc2", 20)),
    _case(".pgpass line", "db.example.com:5432:app:appuser:{s}", "Pg" + fake("pgpass", 14)),
    # From a fresh-eyed audit's corpus: formats and placings the rules missed or masked in part.
    _case(".pgpass line, another port", "pg-replica.internal:5433:analytics:reporter:{s}\n", fake("pgpass5433", 16)),
    _case("URL password with #", "DATABASE_URL=postgres://app:{s}@db:5432/app", "ab#" + fake("pghash", 12)),
    _case(
        "encrypted PEM private key",
        "{s}",
        f"-----BEGIN ENCRYPTED PRIVATE KEY-----\n{_PEM}\n-----END ENCRYPTED PRIVATE KEY-----",
    ),
    _case("Slack config refresh token", "SLACK_CONFIG_REFRESH={s}", "xoxe-1-" + fake("xoxe", 146, UPPER + DIGITS)),
    _case("Heroku v2 token", "heroku auth:token\n{s}\n", "HRKU-AA" + fake("hrku", 58, URLSAFE)),
    _case(
        "GitLab routable token",
        "Created token {s} for project 4211",
        "glpat-" + fake("glroute", 31, URLSAFE) + "." + fake("glroute-tail", 9, LOWER + DIGITS),
    ),
    _case(
        "Heroku API key",
        "HEROKU_API_KEY={s}",
        "-".join(fake(f"heroku{i}", n, HEX) for i, n in enumerate((8, 4, 4, 4, 12))),
    ),
    _case("git credentials line", "https://dev:{s}@git.example.com", "G1t" + fake("gitcred", 12)),
    _case("YAML secret", "  secret: {s}", fake("yamlsecret", 24) + "9"),
    _case("Java property password", "spring.datasource.password={s}", "Spr1ng" + fake("spring", 10)),
    _case(
        "Telegram token assigned",
        "TELEGRAM_BOT_TOKEN={s}",
        fake("tgid3", 10, DIGITS) + ":AA" + fake("tg3", 33, URLSAFE),
    ),
    _case("Linear key", "LINEAR {s}", "lin_api_" + fake("linear", 40)),
    _case("Doppler token", "doppler {s}", "dp.pt." + fake("doppler", 43)),
    _case("Fly.io token", "FLY_API_TOKEN: {s}", "fo1_" + fake("fly", 43, URLSAFE)),
    _case("Brevo key", "brevo {s}", "xkeysib-" + fake("brevo", 64, HEX) + "-" + fake("brevo2", 16)),
    _case("Supabase token", "supabase login --token {s}", "sbp_" + fake("supabase", 40, HEX)),
    _case("New Relic key", "newrelic {s}", "NRAK-" + fake("nrak", 27, UPPER + DIGITS)),
    _case("Perplexity key", "pplx {s}", "pplx-" + fake("pplx", 48)),
    _case("Pulumi token", "pulumi login {s}", "pul-" + fake("pulumi", 40, HEX)),
    _case("Sentry user token", "sentry-cli --auth-token {s}", "sntryu_" + fake("sentry", 64, HEX)),
    _case("Atlassian API token", "jira {s}", "ATATT3" + fake("atlassian", 186, URLSAFE + "=")),
    _case("RubyGems key", "gem signin {s}", "rubygems_" + fake("rubygems", 48, HEX)),
    _case("PuTTY key", "{s}\nEncryption: none", "PuTTY-User-Key-File-2: ssh-rsa"),
    _case("Softlayer key", "softlayer_api_key = {s}", fake("softlayer", 64, LOWER + DIGITS)),
    _case("IBM COS HMAC key", 'cos_secret_access_key = "{s}"', fake("cos", 48, HEX)),
]

# Strings that look like secrets and are not: no rule may match any of them.
BENIGN: list[tuple[str, str]] = [
    ("git commit id", "commit 9fceb02d0ae598e95dc970b74767f19372d61af8"),
    ("sha256sum", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  file.tar.gz"),
    ("md5", "MD5 (x.iso) = " + fake("md5", 32, HEX)),
    ("sha512 hex", "sha512: " + fake("sha512", 128, HEX)),
    ("git log --oneline", "a1b2c3d fix: token refresh\n9f8e7d6 feat: password reset page"),
    ("docker digest", "Digest: sha256:" + fake("digest", 64, HEX)),
    ("image by digest", "image: nginx@sha256:" + fake("nginx", 64, HEX)),
    ("UUID", "request_id=550e8400-e29b-41d4-a716-446655440000"),
    ("UUID in JSON", '{"id": "6f1c2b9e-8a3d-4c7f-9e2a-1b5d3c8f7a60", "status": "ok"}'),
    ("base64 data URI", "data:image/png;base64," + base64.b64encode(fake("png", 120).encode()).decode()),
    ("base64 blob", "payload=" + base64.b64encode(fake("blob", 60).encode()).decode()),
    ("package-lock integrity", '"integrity": "sha512-' + fake("npmlock", 86, B64) + '=="'),
    ("package-lock resolved", '"resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz"'),
    ("yarn.lock", "  integrity sha512-" + fake("yarn", 86, B64) + "=="),
    ("Cargo.lock", 'checksum = "' + fake("cargo", 64, HEX) + '"'),
    ("poetry.lock", '    {file = "requests-2.31.0.tar.gz", hash = "sha256:' + fake("poetry", 64, HEX) + '"},'),
    ("poetry content hash", 'content-hash = "' + fake("contenthash", 64, HEX) + '"'),
    ("go.sum", "golang.org/x/net v0.17.0 h1:" + fake("gosum", 43, B64) + "="),
    ("pnpm-lock", "    resolution: {integrity: sha512-" + fake("pnpm", 86, B64) + "==}"),
    ("ordinary code: token = get_token()", "token = get_token()"),
    ("ordinary code: form password", 'password = request.form["password"]'),
    ("ordinary code: environ", 'api_key = os.environ["OPENAI_API_KEY"]'),
    ("ordinary code: config get", 'secret = config.get("secret")'),
    ("ordinary code: self.token", "self.token = token"),
    ("ordinary code: await", "const token = await getToken();"),
    ("ordinary code: comparison", "if password == confirm_password:"),
    ("ordinary code: count", "token_count = len(tokens)"),
    ("ordinary code: signature", "def check_password(password: str) -> bool:"),
    ("ordinary code: f-string header", 'headers = {"Authorization": f"Bearer {token}"}'),
    ("ordinary code: Optional", "access_token: Optional[str] = None"),
    ("ordinary code: cleaned_data", "password=form.cleaned_data['password']"),
    ("ordinary code: generated", "secret_key=generate_secret_key(32)"),
    ("ordinary code: process.env", "let apiKey = process.env.API_KEY;"),
    ("ordinary code: token URL", 'TOKEN_URL = "https://oauth2.googleapis.com/token"'),
    ("ordinary code: max tokens", "response = client.create(model=m, max_tokens=4096)"),
    ("ordinary code: TypeScript field", "  password: string;"),
    ("ordinary code: tokenizer", 'tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")'),
    ("ordinary code: private key path", 'private_key_path = "~/.ssh/id_rsa"'),
    ("GitHub Actions secret reference", "        token: ${{ secrets.GITHUB_TOKEN }}"),
    ("shell substitution", "export GITHUB_TOKEN=$(gh auth token)"),
    ("Kubernetes secret name", "      secretName: tls-secret"),
    ("cache key", "      key: ${{ runner.os }}-pip-${{ hashFiles('**/requirements.txt') }}"),
    ("placeholder password", "password=changeme"),
    ("URL with a placeholder password", "DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app"),
    ("URL with the default password", "postgres://postgres:postgres@localhost:5432/test"),
    ("URL with a port only", "http://localhost:8080/api/token"),
    ("Authorization from a variable", "Authorization: Bearer $TOKEN"),
    ("ssh remote", "git@github.com:org/repo.git"),
    ("word with sk-", "task-abcdefghij0123456789klmnopqrstuvwxyz"),
    ("AWS documentation example", "aws_access_key_id = AKIA" + "IOSFODNN7EXAMPLE"),
    ("AWS documentation secret", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"),
    ("a CI cache's key", "Cache restored from key: Linux-pip-" + fake("cachekey", 64, HEX)),
    ("a cache key's digest", "cache_key: " + fake("cachedigest", 40, HEX)),
    ("public certificate", "-----BEGIN CERTIFICATE-----\n" + fake("cert", 64, B64) + "\n-----END CERTIFICATE-----"),
    ("public SSH key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + fake("sshpub", 43, B64) + " dev@laptop"),
    (
        "kubeconfig CA data",
        "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t" + fake("ca", 60, B64),
    ),
    ("passwd line", "root:x:0:0:root:/root:/bin/bash"),
    ("IPv6 address", "inet6 fe80:0:0:0:1ff%lo0 prefixlen 64"),
    ("token counts", '{"usage": {"input_tokens": 1532, "output_tokens": 212}}'),
    ("a key in a YAML list", "  - key: app.kubernetes.io/name"),
    ("auth flag", "auth: true"),
    ("secret reference", "secret_ref: vault://kv/app"),
    ("password length", "PASSWORD_MIN_LENGTH = 12"),
    ("CSS hex colours", "color: #ff00aa; background: #0a0b0c;"),
    ("en-US locale", "Accept-Language: en-US,en;q=0.9"),
    ("docker run -p", "docker run -p 8080:80 -p 8443:443 nginx:1.27"),
    ("docker login, then a port", "docker login registry.example.com && docker run -p 5432:5432 postgres"),
    ("docker login from stdin", 'echo "$CR_PAT" | docker login ghcr.io -u ci --password-stdin'),
    ("docker login from a variable", "docker login -u ci -p $REGISTRY_PASSWORD registry.example.com"),
    ("mysql asks for the password", "mysql -h db -u root -p shop"),
    ("mysql password from a variable", 'mysql -uroot -p"$MYSQL_ROOT_PASSWORD" shop'),
    ("mongosh port", "mongosh --port 27017 --quiet"),
    ("ssh port", "ssh -p 2222 deploy@10.0.0.5"),
    ("openssl from the environment", "openssl enc -aes-256-cbc -pass env:ENC_KEY -in a -out b"),
    ("timestamp", "2026-01-02T10:11:12.345Z INFO token refreshed for user 42"),
    ("ordinary code: bcrypt", "password_hash = bcrypt.hashpw(pw.encode(), bcrypt.gensalt())"),
    ("JSON schema", '"password": {"type": "string", "minLength": 8}'),
    ("ordinary code: jwt.encode", 'token = jwt.encode(payload, SECRET, algorithm="HS256")'),
    ("ordinary code: keyword argument", "client = Client(api_key=api_key, timeout=30)"),
    ("ordinary code: secrets module", "secret = secrets.token_hex(32)"),
    ("ordinary code: f-string key", 'key = f"{prefix}:{user_id}"'),
    ("ordinary code: HTTPBasicAuth", "auth = HTTPBasicAuth(user, password)"),
    ("docker login from stdin", "echo $PW | docker login -u ci --password-stdin registry.example.com"),
    ("HTML password input", '<input type="password" name="password" autocomplete="current-password" />'),
    ("SQL column", "  password VARCHAR(255) NOT NULL,"),
    ("API error with a masked key", "Error: Incorrect API key provided: sk-proj-********************abcd"),
    ("Django settings from env", 'SECRET_KEY = env("DJANGO_SECRET_KEY")'),
    ("compose default", "      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:-postgres}"),
    ("ordinary code: load key", "key = serialization.load_pem_private_key(data, password=None)"),
    ("token type", '{"access_token_type": "Bearer", "token_type": "Bearer", "expires_in": 3600}'),
    ("placeholder: your", 'client_secret = "your-client-secret"'),
    ("placeholder: x", 'TOKEN = "xxxxxxxxxxxxxxxxxxxx"'),
    ("placeholder: stars", 'secret = "********"'),
    ("placeholder: upper name", 'API_KEY = "YOUR_API_KEY_HERE"'),
    ("placeholder Stripe key", "STRIPE_SECRET_KEY=sk_test_" + "x" * 24),
    ("pip output", "Successfully installed keyring-24.3.0 SecretStorage-3.3.3 cryptography-42.0.5"),
    ("KeyError", "KeyError: 'password'"),
    ("secretKeyRef", "            secretKeyRef:\n              name: db\n              key: password"),
    ("password file", "      POSTGRES_PASSWORD_FILE: /run/secrets/db_password"),
    ("Terraform variable", "  password = var.db_password"),
    ("auth method", "auth_method: password"),
    ("loop over keys", "for key, value in settings.items():"),
    ("cache key digest", "cache_key = hashlib.sha256(data).hexdigest()"),
    ("signature call", "signature = hmac.new(key, msg, hashlib.sha256).hexdigest()"),
    ("etag", 'etag: "33a64df551425fcc55e4d42a148795d9f25f89d4"'),
    (
        "a Python file read",
        "import os\n\n\ndef login(user: str, password: str) -> Session:\n"
        '    token = fetch_token(user, password)\n    if not token:\n        raise AuthError("bad password")\n'
        '    return Session(token=token, api_key=os.environ["API_KEY"])\n',
    ),
]
