// The secret scanner: one table of texts that must be redacted (with the kind and what must survive around the
// secret), one table of texts that must come back unchanged, and the properties the service relies on.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "daemon/secrets/secret_scanner.h"

namespace memq {
namespace {

struct Positive {
  const char* name;
  std::string text;
  std::string secret;  // must be gone from the redacted text
  std::string kind;
  std::string expected;  // the whole redacted text, when given
  std::string otherSecret = "";  // a second credential in the text, which must be gone too
};

std::vector<Positive> positives() {
  const std::string pem =
      "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq1n3kQ0Zx9Yw\nq8o2Jv3lK9b0cV1xZ7YwQ==\n"
      "-----END RSA PRIVATE KEY-----";
  return {
      {"pem_rsa", "deploy key:\n" + pem + "\nkeep it safe", "MIIEpAIBAAKCAQEA7bq1n3kQ0Zx9Yw", "private_key",
       "deploy key:\n[REDACTED:private_key]\nkeep it safe"},
      {"pem_openssh", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----",
       "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU", "private_key", "[REDACTED:private_key]"},
      {"pem_pgp_block", "x -----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF0abc123\n-----END PGP PRIVATE KEY BLOCK----- y",
       "lQOYBF0abc123", "private_key", "x [REDACTED:private_key] y"},
      {"pem_cut_off", "key: -----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3", "MHcCAQEEIBkg4LVWM9nuwNSk3",
       "private_key", "key: [REDACTED:private_key]"},
      {"aws_akia", "aws key AKIAIOSFODNN7EXAMPLE in ci", "AKIAIOSFODNN7EXAMPLE", "aws_access_key",
       "aws key [REDACTED:aws_access_key] in ci"},
      {"aws_asia", "ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A", "aws_access_key", "[REDACTED:aws_access_key]"},
      {"github_ghp", "export GH=ghp_16C7e42F292c6912E7710c838347Ae178B4a now", "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
       "github_token", "export GH=[REDACTED:github_token] now"},
      {"github_gho", "gho_16C7e42F292c6912E7710c838347Ae178B4a", "gho_16C7e42F292c6912E7710c838347Ae178B4a",
       "github_token", ""},
      {"github_ghu", "(ghu_16C7e42F292c6912E7710c838347Ae178B4a)", "ghu_16C7e42F292c6912E7710c838347Ae178B4a",
       "github_token", "([REDACTED:github_token])"},
      {"github_ghs", "ghs_16C7e42F292c6912E7710c838347Ae178B4a", "ghs_16C7e42F292c6912E7710c838347Ae178B4a",
       "github_token", ""},
      {"github_ghr", "ghr_16C7e42F292c6912E7710c838347Ae178B4a", "ghr_16C7e42F292c6912E7710c838347Ae178B4a",
       "github_token", ""},
      {"github_pat", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF0123456789abcdefghijklmno",
       "11ABCDEFG0123456789_abcdefghijklmnop", "github_token", "[REDACTED:github_token]"},
      {"gitlab", "CI uses glpat-xJ7b2kLq9ZvN4pT1sR8w for the mirror", "glpat-xJ7b2kLq9ZvN4pT1sR8w", "gitlab_token",
       "CI uses [REDACTED:gitlab_token] for the mirror"},
      {"slack_bot", "xoxb-2048123456-4096123456-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOpQrStUvWx", "slack_token",
       "[REDACTED:slack_token]"},
      {"slack_user", "hook xoxp-1234567890-0987654321-abcdef", "xoxp-1234567890", "slack_token", "hook [REDACTED:slack_token]"},
      {"openai_legacy", "OPENAI=sk-aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7bC9dE1fG", "aB3dE5fG7hI9jK1lM3nO5pQ7rS9t",
       "openai_key", "OPENAI=[REDACTED:openai_key]"},
      {"openai_proj", "use sk-proj-Xy12Ab34Cd56Ef78Gh90Ij12Kl34Mn56-Op78_Qr90 here", "Xy12Ab34Cd56Ef78Gh90Ij12Kl34Mn56",
       "openai_key", "use [REDACTED:openai_key] here"},
      {"jwt",
       "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
       "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c ok",
       "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "jwt", "Bearer [REDACTED:jwt] ok"},
      {"password_eq", "DB_PASSWORD=Tr0ub4dor&3x!", "Tr0ub4dor", "password", "DB_PASSWORD=[REDACTED:password]"},
      {"password_then_query", "/login?password=Tr0ub4dor3x&next=/home", "Tr0ub4dor3x", "password",
       "/login?password=[REDACTED:password]&next=/home"},
      {"password_colon", "password: s3cr3t-P4ssw0rd", "s3cr3t-P4ssw0rd", "password", "password: [REDACTED:password]"},
      {"password_json", R"({"user": "app", "password": "q9#Lm2$vX7pR"})", "q9#Lm2$vX7pR", "password",
       R"({"user": "app", "password": "[REDACTED:password]"})"},
      {"password_single_quoted", "passwd = 'h7Gk29aQzL1x'", "h7Gk29aQzL1x", "password", "passwd = '[REDACTED:password]'"},
      {"secret_env", "CLIENT_SECRET=9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a39281706f5e4d3c2b1a0", "secret",
       "CLIENT_SECRET=[REDACTED:secret]"},
      {"aws_secret_key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ3kP9LmAB",
       "wJalrXUtnFEMI/K7MDENG/bPxRfiCY", "secret", ""},
      {"api_key_yaml", "api_key: 4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc", "api_key",
       "api_key: [REDACTED:api_key]"},
      {"api_key_query", "GET /v1?api_key=Zk29fLq81xVb7&page=2", "Zk29fLq81xVb7", "api_key",
       "GET /v1?api_key=[REDACTED:api_key]&page=2"},
      {"token_eq", "set token=a1b2c3d4e5f6g7h8i9j0 and retry.", "a1b2c3d4e5f6g7h8i9j0", "token",
       "set token=[REDACTED:token] and retry."},
      {"authorization_bearer", "Authorization: Bearer 8d9f7a6s5d4f3g2h1j0k", "8d9f7a6s5d4f3g2h1j0k", "token",
       "Authorization: Bearer [REDACTED:token]"},
      {"conn_postgres", "DATABASE_URL=postgres://app:Zx9!pQ2m@db.internal:5432/prod", "Zx9!pQ2m", "connection_string",
       "DATABASE_URL=postgres://app:[REDACTED:connection_string]@db.internal:5432/prod"},
      {"conn_redis_no_user", "redis://:hunter2hunter2@cache:6379/0", "hunter2hunter2", "connection_string",
       "redis://:[REDACTED:connection_string]@cache:6379/0"},
      {"conn_mongo_srv", "mongodb+srv://admin:Pa55w0rd@cluster0.example.net/db", "Pa55w0rd", "connection_string",
       "mongodb+srv://admin:[REDACTED:connection_string]@cluster0.example.net/db"},
      // Vendor keys assembled at run time, so that this file is not itself flagged by a repository's secret scan.
      {"stripe_live", "STRIPE_KEY=" + std::string("sk_") + "live_51Hx2kLq9ZvN4pT1sR8wYb3Dc7 in prod",
       "51Hx2kLq9ZvN4pT1sR8wYb3Dc7", "stripe_key", "STRIPE_KEY=[REDACTED:stripe_key] in prod"},
      {"stripe_restricted", "use " + std::string("rk_") + "live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc",
       "stripe_key", "use [REDACTED:stripe_key]"},
      {"google_bare", "maps key " + std::string("AIza") + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY works",
       "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "google_api_key", "maps key [REDACTED:google_api_key] works"},
      {"npm_bare", "//registry.npmjs.org/:_authToken " + std::string("npm_") + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
       "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "npm_token",
       "//registry.npmjs.org/:_authToken [REDACTED:npm_token]"},
      {"slack_webhook", "alerts go to https://hooks.slack.com/" + std::string("services/") + "T024BE7LD/B01ABCDEF12/" +
                            "aB3dE5fG7hI9jK1lM3nO5pQ7 on failure",
       "aB3dE5fG7hI9jK1lM3nO5pQ7", "slack_webhook", "alerts go to https://hooks.slack.com/services/[REDACTED:slack_webhook] on failure"},
      {"azure_account_key",
       "AZURE=DefaultEndpointsProtocol=https;AccountName=memqstore;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50"
       "uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net",
       "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50", "azure_key",
       "AZURE=DefaultEndpointsProtocol=https;AccountName=memqstore;AccountKey=[REDACTED:azure_key];"
       "EndpointSuffix=core.windows.net"},
      {"azure_shared_access_key", "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;"
                                  "SharedAccessKey=Zk29fLq81xVb7Hn3Pq5Rt6Ys8Uw0Ax2Cz4=",
       "Zk29fLq81xVb7Hn3Pq5Rt6Ys8Uw0Ax2Cz4", "azure_key", ""},
      {"option_password", "mysql -u root --password hunter2 -h db.internal", "hunter2", "password",
       "mysql -u root --password [REDACTED:password] -h db.internal"},
      {"option_password_eq", "psql --db-password=Wq7#vL2!mZ9p prod", "Wq7#vL2!mZ9p", "password",
       "psql --db-password=[REDACTED:password] prod"},
      {"option_quoted_token", "gh api --token 'x9Lm2 Qp7Rt4' repos", "x9Lm2 Qp7Rt4", "token",
       "gh api --token '[REDACTED:token]' repos"},
      {"option_api_key_end_of_sentence", "run it with --api-key k3yV4lu3Z9.", "k3yV4lu3Z9", "api_key",
       "run it with --api-key [REDACTED:api_key]."},
      // A bracket, `;` or `,` inside an unquoted value belongs to it: none ends the value early or makes it code.
      {"password_with_paren", "DB_PASSWORD=Xk9(f#2Lq!vR7", "Xk9(f#2Lq!vR7", "password",
       "DB_PASSWORD=[REDACTED:password]"},
      {"password_with_bracket", "password: Zq8[w#4Lm!xT2 for staging", "Zq8[w#4Lm!xT2", "password",
       "password: [REDACTED:password] for staging"},
      {"password_with_semicolon", "REDIS_PASSWORD=hT7;kQ2!xZ9pW4", "hT7;kQ2!xZ9pW4", "password",
       "REDIS_PASSWORD=[REDACTED:password]"},
      {"password_with_semicolon_after_letters", "REDIS_PASSWORD=Ab3$kL9x;Q2!vv", "Ab3$kL9x;Q2!vv", "password",
       "REDIS_PASSWORD=[REDACTED:password]"},
      {"password_with_comma", "SMTP_PASSWORD=Ab3$kL9x,Q2!vv, then restart", "Ab3$kL9x,Q2!vv", "password",
       "SMTP_PASSWORD=[REDACTED:password], then restart"},
      {"password_in_a_settings_list", "Server=db;UID=sa;PWD=Xk9f2Lq!w;Database=prod", "Xk9f2Lq!w", "password",
       "Server=db;UID=sa;PWD=[REDACTED:password];Database=prod"},
      {"password_before_a_placeholder_item", "password=Wq7#vL2!mZ9p;changeme", "Wq7#vL2!mZ9p", "password",
       "password=[REDACTED:password];changeme"},
      {"token_named_at_the_end_of_a_value", "set password=token=\"a1b2c3d4e5f6g7h8i9j0\"", "a1b2c3d4e5f6g7h8i9j0",
       "token", "set password=token=\"[REDACTED:token]\""},
      // A password may hold `#`, `?` and `@` unescaped; the last `@` before the path ends it.
      {"conn_password_with_hash", "mysql://root:Xk9#mQ2vL7w@localhost/db", "Xk9#mQ2vL7w", "connection_string",
       "mysql://root:[REDACTED:connection_string]@localhost/db"},
      {"conn_password_with_question_mark_and_at", "redis://app:Pq7?z@X2m@cache:6379/0", "Pq7?z@X2m",
       "connection_string", "redis://app:[REDACTED:connection_string]@cache:6379/0"},
      // A list item that is a vendor key wins over the setting around it; the items before it are still judged.
      {"password_item_before_an_aws_key", "password=Xk9#mQ2vL7w,AKIA1234567890ABCDEF", "Xk9#mQ2vL7w", "password",
       "password=[REDACTED:password],[REDACTED:aws_access_key]", "AKIA1234567890ABCDEF"},
      {"token_item_before_a_github_token", "token=Xk9#mQ2vL7w,ghp_16C7e42F292c6912E7710c838347Ae178B4a",
       "Xk9#mQ2vL7w", "token", "token=[REDACTED:token],[REDACTED:github_token]",
       "ghp_16C7e42F292c6912E7710c838347Ae178B4a"},
      {"pwd_item_before_a_jwt",
       "pwd=Xk9#mQ2vL7w;eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
       "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
       "Xk9#mQ2vL7w", "password", "pwd=[REDACTED:password];[REDACTED:jwt]",
       "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"},
      // Base64 may start with `/`; a long stretch mixing upper case, lower case and digits is no file name.
      {"secret_base64_starting_with_a_slash", "aws_secret_access_key=/k9Xq2Lm7Tb0Vw3Rz8Yp1Nc4Hd6Jf5Gs2Ka9Eq",
       "k9Xq2Lm7Tb0Vw3Rz8Yp1Nc4Hd6Jf5Gs2Ka9Eq", "secret", "aws_secret_access_key=[REDACTED:secret]"},
      {"option_password_starting_with_a_slash", "mysql --password /Xk9mQ2vL7wzP -h db.internal", "Xk9mQ2vL7wzP",
       "password", "mysql --password [REDACTED:password] -h db.internal"},
      {"token_starting_with_dot_dot_slash", "token: ../Xk9mQ2vL7w8Pq", "Xk9mQ2vL7w8Pq", "token",
       "token: [REDACTED:token]"},
      // A refused value does not hide a setting inside it.
      {"token_setting_inside_a_placeholder_value", "password=$DB_PASS|api_token=Xk9#mQ2vL7w!", "Xk9#mQ2vL7w!",
       "token", "password=$DB_PASS|api_token=[REDACTED:token]"},
      {"secret_setting_inside_an_example_value", "password=example|secret=Xk9#mQ2vL7w!", "Xk9#mQ2vL7w!", "secret",
       "password=example|secret=[REDACTED:secret]"},
  };
}

TEST(SecretScannerTest, EveryKindIsRedacted) {
  for (const auto& p : positives()) {
    SCOPED_TRACE(p.name);
    std::vector<std::string> kinds;
    std::string out = redactSecrets(p.text, &kinds);
    EXPECT_EQ(out.find(p.secret), std::string::npos) << out;
    if (!p.otherSecret.empty()) {
      EXPECT_EQ(out.find(p.otherSecret), std::string::npos) << out;
    }
    if (kinds.empty()) {  // not an ASSERT: every text of the table that fails is reported, not only the first
      ADD_FAILURE() << "nothing found in " << out;
      continue;
    }
    EXPECT_EQ(kinds.front(), p.kind) << out;
    EXPECT_NE(out.find("[REDACTED:" + p.kind + "]"), std::string::npos) << out;
    if (!p.expected.empty()) {
      EXPECT_EQ(out, p.expected);
    }
  }
}

TEST(SecretScannerTest, OrdinaryTextIsLeftAlone) {
  const std::vector<std::string> negatives = {
      "Reset the password in the admin panel, then restart the worker.",
      "The token: parser splits on whitespace before the lexer runs.",
      "The secret to fast builds is ccache plus ninja.",
      "password: required",
      "token: string",
      "Fixed in 3f2a9c8e1b7d4a6f0c5e2d9b8a7f6e5d4c3b2a19 (git sha) and a1b2c3d.",
      "session 550e8400-e29b-41d4-a716-446655440000 timed out",
      "id=550e8400-e29b-41d4-a716-446655440000",
      "see src/secrets/token_store.cc and /etc/passwd and ../config/password_policy.md",
      "daemon/secrets/secret_scanner.cc: api_key_header() returns the name",
      "api_key=<your key here>",
      "password: changeme",
      "PASSWORD=${DB_PASSWORD}",
      "token: ${{ secrets.GITHUB_TOKEN }}",
      "api_key = os.environ[\"API_KEY\"]",
      "password = process.env.DB_PASSWORD",
      "password=xxxxxxxxxxxx",
      "secret: ************",
      "db_password: $DB_PASS",
      "if token == expected_token_value1: return",
      "let t = Token::new(kind);",
      "tokenizer=unicode61 remove_diacritics 2",
      "We use sk-learn-compatible estimators and scikit-learn.",
      "ghp_ prefixes mark GitHub personal access tokens",
      "AKIA keys are access key ids; AKIAIOSFODNN7EXAMPL is too short",
      "https://github.com/org/repo/blob/main/README.md",
      "postgres://localhost:5432/app and ssh://git@github.com:22/org/repo",
      "https://user:password@example.com is the docs' example",
      "eyJ is how base64 JSON objects start",
      "The JWT secret rotates monthly; see docs/auth.md.",
      "password=[REDACTED:password] already",
      "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
      "BEGIN PRIVATE KEY appears in the PEM spec",
      "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
      "sk_live_ keys must never be committed; pk_live_4eC39HqLyjWDarjtT1zdp7dc is publishable",
      "AIza prefixes mark Google API keys",
      "npm_config_registry=https://registry.npmjs.org and npm_package_version",
      "https://hooks.slack.com/services/ is the webhook base",
      "AccountKey=<storage key> goes in the template; AccountName=memqstore",
      "the --password flag is required, and --token prompts",
      "docker login --password-stdin < token.txt",
      "--no-password disables it; --password <pass> sets one; --token $GITHUB_TOKEN",
      "docker build --secret id=npmrc,src=.npmrc .",
      "use --password=changeme only in tests",
      "a long dash -- password reset is separate",
      // Paths say where a credential is kept, and PWD / OLDPWD are the shell's working directories.
      "PWD=/home/alice/projects/memq",
      "OLDPWD=/tmp/x",
      "passwd: /etc/passwd",
      "private_key=./certs/server.key",
      "ssh_passphrase: ~/.config/memq/ssh-passphrase.txt and token_path=../secrets/ci-token",
      "gh auth login --token ~/.config/gh/ci-token",
      "backup_passphrase: ~/My-Docs_2024/notes.txt and private_key=/home/alice/projects/memq/id_ed25519",
      // Code and lists, which a value's brackets, `;` and `,` no longer make obvious.
      "set a=1, b=2, token=none, password=changeme; then retry",
      "password=none,token=none",
      "token = cls._process_token(tdef[1])",
      "password = base64.b16encode(random_bytes[8:])  # must be valid UTF-8",
      "for (const std::string& token : memq::ftsTokens(query, kMaxQueryTokens)) {",
      "SEC_ERROR_INVALID_PASSWORD = (SEC_ERROR_BASE + 101),",
      ":param passphrase: (optional) if encrypted PEM format",
      "Token:=Token+Expr[I];",
      "function CreateIDToken: TJWTIDToken;override;",
      "{pem: &#x3C;string|buffer>[, passphrase: &#x3C;string>]}",
      // A `?` after a port starts a query, not a password.
      "http://localhost:8080?to=bob@example.com and https://example.com?q=a:b@c",
      "",
  };
  for (const auto& text : negatives) {
    SCOPED_TRACE(text);
    std::vector<std::string> kinds;
    EXPECT_EQ(redactSecrets(text, &kinds), text);
    EXPECT_TRUE(kinds.empty()) << (kinds.empty() ? "" : kinds.front());
  }
}

TEST(SecretScannerTest, RedactionIsIdempotent) {
  for (const auto& p : positives()) {
    SCOPED_TRACE(p.name);
    std::string once = redactSecrets(p.text);
    std::vector<std::string> kinds;
    EXPECT_EQ(redactSecrets(once, &kinds), once);
    EXPECT_TRUE(kinds.empty());
  }
}

TEST(SecretScannerTest, SeveralSecretsInOneTextAreAllFoundInOrder) {
  std::string text =
      "a AKIAIOSFODNN7EXAMPLE b ghp_16C7e42F292c6912E7710c838347Ae178B4a c password=Tr0ub4dor&3x! d "
      "mysql://root:r00tPa55@127.0.0.1/db";
  auto findings = findSecrets(text);
  ASSERT_EQ(findings.size(), 4u);
  EXPECT_EQ(findings[0].kind, "aws_access_key");
  EXPECT_EQ(findings[1].kind, "github_token");
  EXPECT_EQ(findings[2].kind, "password");
  EXPECT_EQ(findings[3].kind, "connection_string");
  for (size_t i = 1; i < findings.size(); ++i) EXPECT_LE(findings[i - 1].end, findings[i].begin);
}

TEST(SecretScannerTest, ASpecificKindWinsOverTheAssignmentAroundIt) {
  std::vector<std::string> kinds;
  std::string out = redactSecrets("GITHUB_TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a", &kinds);
  EXPECT_EQ(out, "GITHUB_TOKEN=[REDACTED:github_token]");
  ASSERT_EQ(kinds.size(), 1u);
  EXPECT_EQ(kinds[0], "github_token");
}

TEST(SecretScannerTest, InvalidUtf8AndBinaryAroundASecretSurvive) {
  std::string text = std::string("\xff\xfe bad ") + "AKIAIOSFODNN7EXAMPLE" + std::string("\x00\xc3", 2) + " end";
  std::string out = redactSecrets(text);
  EXPECT_EQ(out, std::string("\xff\xfe bad [REDACTED:aws_access_key]") + std::string("\x00\xc3", 2) + " end");
}

// Each lead byte followed by as many continuation bytes as it announces: enough to see a character cut in two.
bool hasWholeUtf8Characters(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto lead = static_cast<unsigned char>(text[i]);
    size_t continuation = lead < 0x80                ? 0
                          : (lead & 0xE0) == 0xC0 ? 1
                          : (lead & 0xF0) == 0xE0 ? 2
                          : (lead & 0xF8) == 0xF0 ? 3
                                                  : 4;
    if (continuation == 4) return false;  // a continuation byte without its lead
    for (; continuation > 0; --continuation) {
      if (++i >= text.size() || (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) return false;
    }
  }
  return true;
}

TEST(SecretScannerTest, ALongOptionValueIsRedactedWholeAndLeavesValidUtf8) {
  // 511 ASCII bytes and then a two-byte character: a value cut at 512 bytes would leave half of the character (the
  // save then fails as "not valid UTF-8") and the rest of the value in clear text.
  std::string value;
  while (value.size() < 511) value += "Xk9#mQ2v";
  value.resize(511);
  value += "\xc3\xa9";
  for (const std::string separator : {" ", "="}) {
    SCOPED_TRACE(separator);
    const std::string out = redactSecrets("mysql --password" + separator + value + " -h db.internal \xc3\xa9");
    EXPECT_EQ(out, "mysql --password" + separator + "[REDACTED:password] -h db.internal \xc3\xa9");
    EXPECT_TRUE(hasWholeUtf8Characters(out));
    EXPECT_EQ(out.find(value.substr(0, 8)), std::string::npos);
  }
}

TEST(SecretScannerTest, ShannonEntropy) {
  EXPECT_DOUBLE_EQ(shannonEntropy(""), 0.0);
  EXPECT_DOUBLE_EQ(shannonEntropy("aaaa"), 0.0);
  EXPECT_DOUBLE_EQ(shannonEntropy("abab"), 1.0);
  EXPECT_DOUBLE_EQ(shannonEntropy("abcdefgh"), 3.0);
  EXPECT_GT(shannonEntropy("wJalrXUtnFEMI/K7MDENG/bPxRfiCY"), 4.0);
}

TEST(SecretScannerTest, Placeholders) {
  for (const char* p : {"xxx", "<password>", "changeme", "${SECRET}", "$SECRET", "********", "your_api_key_here",
                        "[REDACTED:token]", "{{ .Values.password }}", "example-token-1234"}) {
    EXPECT_TRUE(isPlaceholderSecret(p)) << p;
  }
  for (const char* p : {"Tr0ub4dor&3x", "9f8e7d6c5b4a3928", "q9#Lm2$vX7pR"}) EXPECT_FALSE(isPlaceholderSecret(p)) << p;
}

// `bytes` (rounded up to whole units) of near-misses of every kind, each unit followed by one real AWS key; *keys
// counts the keys.
std::string nearMissesAndKeys(size_t bytes, size_t* keys) {
  std::string text;
  *keys = 0;
  while (text.size() < bytes) {
    text += "token= password: eyJabc. sk- ghp_ AKIA -----BEGIN x://a:b ";
    text += "AKIAIOSFODNN7EXAMPLE ";
    ++*keys;
  }
  return text;
}

// How long one scan of `text` takes.
std::chrono::nanoseconds timedScan(const std::string& text) {
  const auto start = std::chrono::steady_clock::now();
  static_cast<void>(findSecrets(text));
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
}

// Eight times the text must cost about eight times the work. The scanner counts no steps, so the work is its time,
// compared between two sizes on the same machine at the same moment, never against a clock: a linear scanner takes ~8
// times as long, one that re-reads the text from each near-miss ~64 times. 24 leaves room for noise (and cache effects
// on the larger text) on either side. The sizes take turns and each keeps its fastest scan, so a stretch of load from
// other tests slows both or neither.
void expectLinearScan(const std::string& small, const std::string& large) {
  auto smallTime = std::chrono::nanoseconds::max(), largeTime = std::chrono::nanoseconds::max();
  for (int round = 0; round < 3; ++round) {
    smallTime = std::min(smallTime, timedScan(small));
    largeTime = std::min(largeTime, timedScan(large));
  }
  ASSERT_GT(smallTime.count(), 0);
  const double ratio = static_cast<double>(largeTime.count()) / static_cast<double>(smallTime.count());
  EXPECT_LT(ratio, 24.0) << "8x the text took " << ratio << "x as long (" << smallTime.count() << " ns for "
                         << small.size() << " bytes, " << largeTime.count() << " ns for " << large.size() << ")";
}

size_t awsKeysFound(const std::string& text) {
  size_t aws = 0;
  for (const auto& f : findSecrets(text)) aws += f.kind == "aws_access_key";
  return aws;
}

TEST(SecretScannerTest, LargeInputsAreLinear) {
  // Near-misses of every kind and real keys: every real key is found, and the scan stays linear.
  size_t smallKeys = 0, largeKeys = 0;
  const std::string small = nearMissesAndKeys(512u << 10, &smallKeys);
  const std::string large = nearMissesAndKeys(4u << 20, &largeKeys);
  EXPECT_EQ(awsKeysFound(small), smallKeys);
  EXPECT_EQ(awsKeysFound(large), largeKeys);
  expectLinearScan(small, large);
}

// `unit` repeated to exactly `bytes` bytes.
std::string repeated(const std::string& unit, size_t bytes) {
  std::string text;
  while (text.size() < bytes) text += unit;
  text.resize(bytes);
  return text;
}

TEST(SecretScannerTest, SettingsInsideOneLongValueStayLinear) {
  // "pwd=pwd=pwd=…" is one unquoted value (it holds no blank), and each name in it starts a value that runs to the
  // same end. Read again from each name, the text costs the square of its length: 64 KB took seconds, on the
  // daemon's I/O thread. The last units mix in a `;` list, a name right before a quote, a call, and a refused value
  // with a setting inside it.
  for (const std::string unit : {"pwd=", "token:", "secret=", "password: ", "api_key=", "pwd=x;{pwd=",
                                 "password=token=\"", "password=f(", "x:token=;", "pwd=$x|"}) {
    SCOPED_TRACE(unit);
    expectLinearScan(repeated(unit, 32u << 10), repeated(unit, 256u << 10));
    if (HasFailure()) break;  // a quadratic scan of the larger text takes about a minute: one unit is proof enough
  }
}

TEST(SecretScannerTest, NearMissesOfTheNewerKindsStayLinear) {
  // Each would be scanned to the end of the text from every occurrence by a detector that re-reads a refused run:
  // 1 MiB of them would then not finish. None is a credential.
  for (const std::string unit : {"AIza-", "AccountKey=", "(--password=-", "--token \"", "hooks.slack.com/services/"}) {
    SCOPED_TRACE(unit);
    std::string text;
    while (text.size() < (1u << 20)) text += unit;
    EXPECT_TRUE(findSecrets(text).empty());
  }
}

}  // namespace
}  // namespace memq
