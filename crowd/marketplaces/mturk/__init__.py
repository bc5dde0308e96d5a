"""Amazon Mechanical Turk: the boto3 client and adapter (client.py), its fees and its policy."""
