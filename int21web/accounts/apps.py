from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "int21web.accounts"
    label = "accounts"
    verbose_name = "Accounts and roles"
