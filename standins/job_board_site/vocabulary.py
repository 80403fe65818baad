"""Word lists the jobs board is generated from (``standins.job_board_site.board``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CategorySpec:
    slug: str
    name: str
    roles: tuple[str, ...]
    teams: tuple[str, ...]
    skills: tuple[str, ...]
    duties: tuple[str, ...]


CATEGORIES: tuple[CategorySpec, ...] = (
    CategorySpec(
        "engineering",
        "Engineering",
        ("Backend Engineer", "Frontend Engineer", "Site Reliability Engineer", "Mobile Developer"),
        ("Platform", "Payments", "Checkout", "Infrastructure", "Mobile Apps"),
        ("Python", "Go", "TypeScript", "Kubernetes", "PostgreSQL", "Kafka", "React", "Terraform"),
        (
            "design and run the services behind our busiest pages",
            "review code and keep our deployment pipeline fast",
            "take part in an on-call rotation with a sane number of pages",
            "turn product ideas into small, well-tested changes",
        ),
    ),
    CategorySpec(
        "data",
        "Data & Analytics",
        ("Data Engineer", "Data Analyst", "Machine Learning Engineer", "Analytics Engineer"),
        ("Insights", "Search Relevance", "Forecasting", "Data Platform"),
        ("SQL", "Python", "Spark", "dbt", "Airflow", "Statistics", "Tableau", "PyTorch"),
        (
            "build the pipelines that feed our reporting",
            "answer product questions with careful analysis",
            "train and evaluate models that ship to production",
            "keep our metrics definitions consistent across teams",
        ),
    ),
    CategorySpec(
        "design",
        "Design",
        ("Product Designer", "UX Researcher", "Visual Designer", "Content Designer"),
        ("Design System", "Onboarding", "Brand", "Growth"),
        ("Figma", "User Research", "Prototyping", "Accessibility", "Copywriting", "Illustration"),
        (
            "shape new features from the first sketch to the final pixel",
            "run interviews and usability tests with our customers",
            "grow and document our design system",
            "work closely with engineers on every release",
        ),
    ),
    CategorySpec(
        "sales",
        "Sales",
        ("Account Executive", "Sales Development Representative", "Partnerships Manager"),
        ("Enterprise", "Mid-Market", "Partnerships", "EMEA Sales"),
        ("Salesforce", "Negotiation", "Prospecting", "Forecasting", "HubSpot", "Presenting"),
        (
            "own a pipeline of new business from first call to signature",
            "build lasting relationships with our largest customers",
            "work with marketing on campaigns that reach the right people",
            "bring what customers tell you back to the product team",
        ),
    ),
    CategorySpec(
        "operations",
        "Operations",
        ("Operations Manager", "Finance Analyst", "People Partner", "Office Coordinator"),
        ("Finance", "People", "Workplace", "Business Operations"),
        ("Excel", "Budgeting", "Recruiting", "Process Design", "Payroll", "Vendor Management"),
        (
            "keep the processes that the whole company relies on running smoothly",
            "prepare the monthly numbers and explain what moved",
            "improve how we hire, onboard and support our people",
            "manage suppliers and contracts",
        ),
    ),
    CategorySpec(
        "support",
        "Customer Support",
        ("Customer Support Specialist", "Support Engineer", "Customer Success Manager"),
        ("Customer Care", "Technical Support", "Customer Success"),
        ("Zendesk", "Troubleshooting", "Written Communication", "SQL", "Onboarding", "German"),
        (
            "answer customer questions by chat, mail and phone",
            "reproduce tricky problems and hand clear reports to engineering",
            "write help-centre articles that prevent the next ticket",
            "help new customers get the most out of the product",
        ),
    ),
)

COMPANY_FIRST = (
    "Northwind",
    "Bluefin",
    "Copperleaf",
    "Lumen",
    "Harbor",
    "Quill",
    "Brightpath",
    "Tidewater",
    "Ironbark",
    "Kestrel",
    "Mosaic",
    "Pinecone",
    "Redwood",
    "Sable",
    "Orbit",
    "Fjord",
    "Juniper",
    "Atlas",
    "Cobalt",
    "Meridian",
)
COMPANY_SECOND = ("Labs", "Systems", "Analytics", "Health", "Logistics", "Software", "Energy")
COMPANY_ABOUT = (
    "builds software that helps small shops sell online",
    "moves parcels across Europe for thousands of merchants",
    "makes energy use visible for households and offices",
    "helps clinics schedule appointments without the phone calls",
    "runs a marketplace for second-hand electronics",
    "gives finance teams one place for every invoice",
    "plans routes for delivery fleets in real time",
    "builds tools that make data teams faster",
)

# (city, region, ISO 3166-1 alpha-2 country)
LOCATIONS: tuple[tuple[str, str, str], ...] = (
    ("Berlin", "Berlin", "DE"),
    ("Munich", "Bavaria", "DE"),
    ("Hamburg", "Hamburg", "DE"),
    ("Paris", "Ile-de-France", "FR"),
    ("Lyon", "Auvergne-Rhone-Alpes", "FR"),
    ("Madrid", "Community of Madrid", "ES"),
    ("Barcelona", "Catalonia", "ES"),
    ("Amsterdam", "North Holland", "NL"),
    ("Dublin", "Leinster", "IE"),
    ("London", "England", "GB"),
    ("Manchester", "England", "GB"),
    ("Edinburgh", "Scotland", "GB"),
    ("New York", "New York", "US"),
    ("Austin", "Texas", "US"),
    ("San Francisco", "California", "US"),
    ("Chicago", "Illinois", "US"),
)
CURRENCY_BY_COUNTRY = {"GB": "GBP", "US": "USD"}  # everyone else: EUR
# A yearly salary in these currencies is this factor times the EUR one (rounded).
CURRENCY_FACTOR = {"EUR": 1.0, "GBP": 0.9, "USD": 1.3}

# schema.org employmentType values, weighted.
EMPLOYMENT_TYPES: tuple[tuple[str, int], ...] = (
    ("FULL_TIME", 60),
    ("PART_TIME", 10),
    ("CONTRACTOR", 14),
    ("TEMPORARY", 8),
    ("INTERN", 8),
)
EMPLOYMENT_LABELS = {
    "FULL_TIME": "Full-time",
    "PART_TIME": "Part-time",
    "CONTRACTOR": "Contract",
    "TEMPORARY": "Temporary",
    "INTERN": "Internship",
}
LEVELS = ("Junior", "Mid", "Senior", "Lead")
# Yearly EUR base salary (the low end of the range) per experience level.
LEVEL_BASE_SALARY = {"Junior": 38_000, "Mid": 52_000, "Senior": 68_000, "Lead": 85_000}

OFFERS = (
    "We offer flexible hours, a learning budget and 28 days of holiday.",
    "You get a modern laptop, a home-office allowance and a yearly team trip.",
    "We pay for public transport, language classes and conference tickets.",
    "Expect a calm onboarding, a mentor for your first months and real ownership.",
)
