import torch
def get_inputs(:
    return []
