from apps.reports.services import report_pdf

def test_dump(report):
    open("/tmp/report.pdf", "wb").write(report_pdf(report))
