from django import forms


class ImportForm(forms.Form):
    """The import page: paste or upload a problem file, name it, add shapes."""

    source = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 18, "spellcheck": "false",
                                                                           "class": "code"}),
                             help_text="A KernelBench-format file: class Model(nn.Module), get_inputs(), "
                                       "get_init_inputs() and module constants.")
    file = forms.FileField(required=False, help_text="…or upload the .py file")
    name = forms.CharField(required=False, max_length=64,
                           help_text="lower_case name for the workload (default: op_ and a digest)")
    shapes = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}),
                             help_text="More shapes, one per line, as module constants: batch_size=64")

    def problem_source(self) -> str:
        upload = self.cleaned_data.get("file")
        if upload:
            if upload.size > 256 * 1024:
                raise forms.ValidationError("the file is larger than 256 KiB")
            try:
                return upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise forms.ValidationError("the file is not UTF-8 text") from None
        return self.cleaned_data.get("source") or ""
