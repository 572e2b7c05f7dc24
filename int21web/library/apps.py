from django.apps import AppConfig


class LibraryConfig(AppConfig):
    name = "int21web.library"
    label = "library"
    verbose_name = "Reviews, kernel library and knowledge"
